//! Every parser of client or file input, on arbitrary bytes (see
//! `frontier_rules::robustness`). Run with `make fuzz`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        frontier_rules::robustness::exercise_parsers(text);
    }
});
