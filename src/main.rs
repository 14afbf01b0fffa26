//! `tamebi`: the orchestrator binary. Thin on purpose: load config, wire, serve.
fn main() -> anyhow::Result<()> {
    tamebi::run_from_env()
}
