//! Tamebi orchestrator (work in progress: the spine lands in issue 2).
pub fn run_from_env() -> anyhow::Result<()> {
    anyhow::bail!("the orchestrator is not wired yet")
}
