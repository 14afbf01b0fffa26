//! mcp-nextcloud (work in progress: issue 3).
fn main() {}
