#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| celhook::fuzz::json(data));
