//! loadgen (work in progress: issue 2).
fn main() {}
