//! vCard handling: one address-book object as `tools::contacts::contact` reads it (calcard's
//! parser, then the properties a contact row shows). Property: nothing panics, and the row
//! keeps the href it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &str| {
    if let Some(c) = mcp_nextcloud::tools::contacts::contact(data, "contacts/card.vcf") {
        assert_eq!(c.href, "contacts/card.vcf");
    }
});
