//! `otlp-sink --bind 127.0.0.1:PORT`: the harness's OTLP/HTTP receiver as a process, for
//! benchmarks with tracing on (`BENCH_OTLP=1 dev/loadgen/bench.sh …`). Decodes every export
//! with opentelemetry-proto, keeps nothing, and on SIGTERM or Ctrl-C prints what it received.

use test_harness::otlp::OtlpReceiver;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = match (args.next().as_deref(), args.next()) {
        (Some("--bind"), Some(addr)) => addr,
        _ => anyhow::bail!("usage: otlp-sink --bind 127.0.0.1:PORT"),
    };
    let receiver = OtlpReceiver::start_on(&bind, false);
    println!("listening on {}", receiver.endpoint());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        anyhow::Ok(())
    })?;
    let (spans, metric_exports, bytes) = receiver.counts();
    println!(
        "otlp-sink received {spans} spans, {metric_exports} metric exports, {bytes} bytes, {} undecodable",
        receiver.undecodable()
    );
    Ok(())
}
