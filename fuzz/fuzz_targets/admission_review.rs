#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| celhook::fuzz::admission_review(data));
