//! A mail as it will go out: validated once, here, for `mail_compose`, `mail_send` and
//! `mail_save_draft` alike, so what the person saw is what is sent.
//!
//! Owns: address validation (RFC 5322 addr-spec via the email_address crate, bare addresses
//! only: a display name would be text the person does not see in the To line), subject
//! and size limits. Must never: rewrite the body or the subject (no trimming, no wrapping,
//! no signature): the frame shows exactly these bytes and the bridge sends exactly these.

use email_address::{EmailAddress, Options};
use rmcp::schemars;
use serde::{Deserialize, Serialize};

use crate::bridge::Outgoing;
use crate::error::Error;

/// Recipients across To, Cc and Bcc.
pub const MAX_RECIPIENTS: usize = 100;
/// RFC 5322's line limit, for the subject (one header line).
pub const MAX_SUBJECT_CHARS: usize = 998;
/// Plain-text body limit in characters (the bridge's own limit).
pub const MAX_BODY_CHARS: usize = 100_000;

/// What a mail is validated for: a mail to send needs a recipient, a draft need not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Send,
    Draft,
}

/// The arguments every outgoing-mail tool takes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailArgs {
    /// The account to send from (an id from mail_accounts); omitted = the user's first account.
    #[serde(default)]
    pub account_id: Option<i64>,
    /// Recipient addresses, e.g. ["bob@example.com"].
    #[serde(default)]
    pub to: Vec<String>,
    /// Carbon-copy addresses.
    #[serde(default)]
    pub cc: Vec<String>,
    /// Blind carbon-copy addresses.
    #[serde(default)]
    pub bcc: Vec<String>,
    /// One line of subject.
    pub subject: String,
    /// The plain-text body, exactly as it will be sent.
    pub body: String,
    /// The id (from mail_search) of the message this answers, if any.
    #[serde(default)]
    pub in_reply_to: Option<i64>,
}

/// The sender shown in the From line.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Sender {
    pub account_id: i64,
    pub name: String,
    pub email: String,
}

/// The exact message that would go out: what mail_compose returns and the frame shows. The
/// mail itself is the very bridge request mail_send would make ([`outgoing`]), so the fields
/// shown cannot differ from the fields sent.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Composed {
    pub from: Sender,
    #[serde(flatten)]
    pub mail: Outgoing,
    /// Always false: composing sends nothing and saves nothing.
    pub sent: bool,
}

/// Validates `args` for `purpose` (everything but the account, which the bridge knows).
pub fn validate(args: &MailArgs, purpose: Purpose) -> Result<(), Error> {
    let all = args.to.iter().chain(&args.cc).chain(&args.bcc);
    let count = args.to.len() + args.cc.len() + args.bcc.len();
    if count == 0 && purpose == Purpose::Send {
        return Err(Error::invalid("a mail needs at least one recipient in to, cc or bcc"));
    }
    if count > MAX_RECIPIENTS {
        return Err(Error::invalid(format!("at most {MAX_RECIPIENTS} recipients, got {count}")));
    }
    for address in all {
        check_address(address)?;
    }
    if args.subject.contains(['\r', '\n']) {
        return Err(Error::invalid("the subject must be one line"));
    }
    if args.subject.chars().count() > MAX_SUBJECT_CHARS {
        return Err(Error::invalid(format!("the subject is longer than {MAX_SUBJECT_CHARS} characters")));
    }
    if args.body.chars().count() > MAX_BODY_CHARS {
        return Err(Error::invalid(format!("the body is longer than {MAX_BODY_CHARS} characters")));
    }
    if args.subject.contains('\0') || args.body.contains('\0') {
        return Err(Error::invalid("the subject and body must not contain NUL characters"));
    }
    Ok(())
}

/// A bare `local@domain.tld` address; anything else is refused with the address named.
fn check_address(address: &str) -> Result<(), Error> {
    let options = Options::default()
        .without_display_text()
        .with_required_tld()
        .without_domain_literal();
    if address != address.trim() || address.is_empty() {
        return Err(Error::invalid(format!("{address:?} is not an email address (no spaces around it)")));
    }
    EmailAddress::parse_with_options(address, options)
        .map(|_| ())
        .map_err(|e| Error::invalid(format!("{address:?} is not a valid email address: {e}")))
}

/// The exact message, once the sending account is known.
pub fn composed(args: &MailArgs, from: Sender) -> Composed {
    Composed {
        mail: outgoing(args, from.account_id),
        from,
        sent: false,
    }
}

/// The bridge request for `args` sent from `account_id`.
pub fn outgoing(args: &MailArgs, account_id: i64) -> Outgoing {
    Outgoing {
        account_id,
        to: args.to.clone(),
        cc: args.cc.clone(),
        bcc: args.bcc.clone(),
        subject: args.subject.clone(),
        body: args.body.clone(),
        in_reply_to: args.in_reply_to,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(to: &[&str]) -> MailArgs {
        MailArgs {
            account_id: None,
            to: to.iter().map(|s| s.to_string()).collect(),
            cc: vec![],
            bcc: vec![],
            subject: "Budget".into(),
            body: "Hi Bob,\n\nthe numbers.\n".into(),
            in_reply_to: None,
        }
    }

    #[test]
    fn good_addresses_pass() {
        validate(&args(&["bob@example.com", "first.last+tag@sub.example.org"]), Purpose::Send).unwrap();
        // A draft may be saved before anyone is named.
        validate(&args(&[]), Purpose::Draft).unwrap();
    }

    #[test]
    fn bad_addresses_are_named() {
        for bad in [
            "bob",
            "bob@localhost",
            "Bob <bob@example.com>",
            " bob@example.com",
            "a@[127.0.0.1]",
            "a@b@example.com",
            "",
        ] {
            let e = validate(&args(&[bad]), Purpose::Send).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{bad}");
            assert!(e.to_string().contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn recipients_subject_and_size_are_checked() {
        assert!(
            validate(&args(&[]), Purpose::Send)
                .unwrap_err()
                .to_string()
                .contains("at least one recipient")
        );
        let mut a = args(&["bob@example.com"]);
        a.subject = "Budget\r\nBcc: eve@example.com".into();
        assert!(validate(&a, Purpose::Send).unwrap_err().to_string().contains("one line"));
        let mut a = args(&["bob@example.com"]);
        a.body = "x".repeat(MAX_BODY_CHARS + 1);
        assert!(validate(&a, Purpose::Send).is_err());
        let many: Vec<String> = (0..=MAX_RECIPIENTS).map(|i| format!("u{i}@example.com")).collect();
        let mut a = args(&[]);
        a.bcc = many;
        assert!(validate(&a, Purpose::Send).unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn what_is_shown_is_what_is_sent() {
        let mut a = args(&["bob@example.com"]);
        a.body = "  leading spaces\r\nand a trailing newline\n".into();
        a.cc = vec!["carol@example.com".into()];
        a.in_reply_to = Some(9);
        let c = composed(
            &a,
            Sender {
                account_id: 4,
                name: "Alice".into(),
                email: "alice@example.com".into(),
            },
        );
        assert_eq!(c.mail, outgoing(&a, 4));
        assert_eq!(c.mail.body, "  leading spaces\r\nand a trailing newline\n");
        // The frame reads the fields at the top level, next to `from`.
        let shown = serde_json::to_value(&c).unwrap();
        assert_eq!(shown["to"], serde_json::json!(["bob@example.com"]));
        assert_eq!(shown["from"]["account_id"], 4);
        assert!(!c.sent);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let r: Result<MailArgs, _> =
            serde_json::from_value(serde_json::json!({"to": ["b@example.com"], "subject": "s", "body": "b", "uid": "bob"}));
        assert!(r.is_err());
    }
}
