//! The mail bridge's answers as mcp-mail reads them (`bridge::read_every_answer`: the HTTP
//! status with the bridge's error envelope, then the OCS envelope as each call's type, and an
//! HTML message body turned into text as the model reads it).
//!
//! Input: two bytes of HTTP status (taken modulo the 100-599 range, with 200 most likely),
//! then the body. Properties: nothing panics; a send whose answer was 2xx is either done or
//! of unknown outcome, never an error that invites a retry (which could send a mail twice).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_mail::Error;

fuzz_target!(|data: &[u8]| {
    let (status, body) = match data {
        [a, b, rest @ ..] => {
            let raw = u16::from_le_bytes([*a, *b]);
            // Half of all inputs are a 200, the status under which the JSON is read.
            (if raw & 1 == 0 { 200 } else { 100 + (raw >> 1) % 500 }, rest)
        }
        _ => return,
    };
    for (call, result) in mcp_mail::bridge::read_every_answer(status, body) {
        if call == "send" && (200..300).contains(&status) {
            assert!(
                matches!(result, Ok(()) | Err(Error::OutcomeUnknown)),
                "send answered {status}: {result:?}"
            );
        }
    }
});
