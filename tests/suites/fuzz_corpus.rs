//! Replays every fuzz input kept in the repository through its target's
//! entry point (`celhook::fuzz`): the corpus the fuzzer built
//! (`fuzz/corpus/<target>/`) and every input that once crashed
//! (`fuzz/regressions/<target>/`, named after what broke). A panic here is
//! a regression of a bug the fuzzer found.

use std::path::Path;

fn replay(dir: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(dir);
    let mut total = 0;
    for (name, target) in celhook::fuzz::TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).expect("readable fuzz input");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(
                outcome.is_ok(),
                "{name}: {} fails again (cargo fuzz run -s none {name} {})",
                file.display(),
                file.display()
            );
            total += 1;
        }
    }
    total
}

#[test]
fn every_input_that_once_crashed_passes() {
    let n = replay("regressions");
    assert!(n >= 3, "the regression inputs are found ({n})");
}

#[test]
fn the_fuzz_corpus_passes() {
    let n = replay("corpus");
    assert!(
        n >= celhook::fuzz::TARGETS.len(),
        "the corpus is found ({n})"
    );
}
