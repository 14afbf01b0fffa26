//! One statement for the small requests of many turns (issue #33, P9): the replay records (a
//! soft-state write, one transaction that does not wait for the WAL flush:
//! [`super::unflushed_query`]) and the facts reads that arrive while the previous statement
//! runs are sent together.
//!
//! A request used to cost its own transaction (and its own trip through a PostgreSQL backend
//! that shares the machine's cores); under load one statement now answers dozens.
//!
//! What it must never do:
//! - answer a request with a statement that started before the request was queued (a read
//!   must see every write acknowledged before it asked: the writer takes only what is queued
//!   when it starts a statement);
//! - answer a request before the statement holding it has committed, or answer it with
//!   another request's outcome: the statement returns the rows it wrote or read, and each
//!   request is answered from those rows;
//! - retry a statement that failed: every request of it gets the error, which its caller
//!   already handles (a replay check refuses the request: G1 fails closed; a turn goes on
//!   without its facts and logs it);
//! - be used for a write that must survive a PostgreSQL crash: nothing here waits for the flush.

use std::future::Future;
use tokio::sync::{mpsc, oneshot};

use deadpool_postgres::Pool;

use crate::error::Error;

/// Most requests in one statement: bounds its size and the time its callers wait.
const MAX_BATCH: usize = 256;

/// Requests waiting; a caller beyond it waits to enqueue (back-pressure).
const QUEUE: usize = 1024;

type Job<Req, Out> = (Req, oneshot::Sender<Result<Out, Error>>);

/// The queue in front of one writer task, which ends when the last handle is dropped.
pub(super) struct Batched<Req, Out> {
    queue: mpsc::Sender<Job<Req, Out>>,
}

impl<Req: Send + 'static, Out: Send + 'static> Batched<Req, Out> {
    /// Starts the writer: `run` gets every request queued at that moment and must return one
    /// answer per request, in their order.
    pub fn start<F, Fut>(pool: Pool, run: F) -> Batched<Req, Out>
    where
        F: Fn(Pool, Vec<Req>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Vec<Out>, Error>> + Send,
    {
        let (queue, mut rx) = mpsc::channel::<Job<Req, Out>>(QUEUE);
        // Ends once every handle is dropped: each caller awaits its answer, so none is lost.
        #[expect(
            clippy::disallowed_methods,
            reason = "ends with the last handle; every caller awaits its own answer"
        )]
        tokio::spawn(async move {
            let mut jobs = Vec::new();
            while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
                let (requests, answers): (Vec<Req>, Vec<_>) = std::mem::take(&mut jobs).into_iter().unzip();
                let outcome = run(pool.clone(), requests).await;
                answer_all(answers, outcome);
            }
        });
        Batched { queue }
    }

    /// `request`'s answer, once the statement holding it has committed (or failed).
    pub async fn call(&self, request: Req) -> Result<Out, Error> {
        let (done, answer) = oneshot::channel();
        self.queue
            .send((request, done))
            .await
            .map_err(|_| Error::Internal("a batched writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| Error::Internal("a batched writer stopped before answering".into()))?
    }
}

/// Each caller its own answer; on failure the first gets the error, the others its message.
fn answer_all<Out>(answers: Vec<oneshot::Sender<Result<Out, Error>>>, outcome: Result<Vec<Out>, Error>) {
    match outcome {
        Ok(outs) if outs.len() == answers.len() => {
            for (done, out) in answers.into_iter().zip(outs) {
                let _ = done.send(Ok(out));
            }
        }
        Ok(outs) => {
            let said = format!("a batched write answered {} of {} requests", outs.len(), answers.len());
            for done in answers {
                let _ = done.send(Err(Error::Internal(said.clone())));
            }
        }
        Err(e) => {
            let said = e.to_string();
            let mut first = Some(e);
            for done in answers {
                let e = first.take().unwrap_or_else(|| Error::Internal(said.clone()));
                let _ = done.send(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caller_gets_its_own_answer_or_the_error() {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| oneshot::channel::<Result<u8, Error>>()).unzip();
        answer_all(txs, Ok(vec![1, 2, 3]));
        let got: Vec<u8> = rxs.into_iter().map(|mut rx| rx.try_recv().unwrap().unwrap()).collect();
        assert_eq!(got, [1, 2, 3]);

        let (txs, rxs): (Vec<_>, Vec<_>) = (0..2).map(|_| oneshot::channel::<Result<u8, Error>>()).unzip();
        answer_all(txs, Ok(vec![1]));
        assert!(
            rxs.into_iter().all(|mut rx| rx.try_recv().unwrap().is_err()),
            "a short answer is nobody's"
        );

        let (txs, rxs): (Vec<_>, Vec<_>) = (0..2).map(|_| oneshot::channel::<Result<u8, Error>>()).unzip();
        answer_all(txs, Err(Error::Internal("down".into())));
        for mut rx in rxs {
            assert!(rx.try_recv().unwrap().unwrap_err().to_string().contains("down"));
        }
    }
}
