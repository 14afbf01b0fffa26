//! `tamebi`: the orchestrator binary. Thin on purpose: load config, wire, serve.

/// jemalloc, not glibc's malloc: a held stream's long-lived allocations sit among the
/// short-lived ones of every stream's start, and jemalloc's size classes keep them apart
/// (about 2 KiB less resident memory per open stream), at less CPU per turn. Its default
/// settings: the ones that save more memory cost CPU per turn or serialise every allocation
/// on one lock (docs/performance.md, "Decisions").
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    tamebi::run_from_env()
}
