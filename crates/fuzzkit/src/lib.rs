//! `ferroflux-fuzzkit` (dev-only): what the fuzz tests of the parsers share — a seeded
//! generator of random input, mutations of valid input (the way coverage-guided fuzzers start
//! from a corpus), and a runner that tries a bounded number of cases and, when one panics,
//! names the seed that replays it.
//!
//! `./test.sh` runs each target for its default number of cases (seconds). A longer run:
//! `FUZZ_CASES=100000 cargo test -p <crate> fuzz`; `FUZZ_SEED=<n>` replays a reported failure.
//! Every input a run found to crash becomes a regression test next to the target.
//!
//! It owns no knowledge of any format and must not depend on any other crate: the targets
//! bring their corpus and dictionary.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// xorshift64*: small, fast and reproducible from its seed; enough spread for input
/// generation (nothing here needs unpredictability).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Rng {
        // A zero state would stay zero.
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 bits of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// A byte that is often one of the format's special characters.
    pub fn byte(&mut self, dictionary: &[&str]) -> u8 {
        match self.below(4) {
            0 => self.below(256) as u8,
            _ if dictionary.is_empty() => b" \n\t:{}[]$#%/\\\"'-,.=*&!|>"[self.below(24)],
            1 => b" \n\t:{}[]$#%/\\\"'-,.=*&!|>"[self.below(24)],
            _ => {
                let word = self.pick(dictionary).as_bytes();
                if word.is_empty() {
                    b'a'
                } else {
                    word[self.below(word.len())]
                }
            }
        }
    }

    /// Up to `max` random characters drawn from `dictionary` words and special characters.
    pub fn text(&mut self, dictionary: &[&str], max: usize) -> String {
        let mut out = String::new();
        let target = self.below(max + 1);
        while out.len() < target {
            if self.one_in(2) && !dictionary.is_empty() {
                out.push_str(self.pick(dictionary));
            } else {
                out.push(self.byte(&[]) as char);
            }
        }
        out
    }

    /// `input` with one to eight mutations: bytes flipped, inserted, deleted; spans duplicated,
    /// moved or cut; dictionary words inserted or swapped in; lines shuffled.
    pub fn mutate(&mut self, input: &[u8], dictionary: &[&str]) -> Vec<u8> {
        let mut data = input.to_vec();
        for _ in 0..1 + self.below(8) {
            let len = data.len();
            match self.below(9) {
                0 if len > 0 => {
                    let i = self.below(len);
                    data[i] ^= 1 << self.below(8);
                }
                1 => {
                    let i = self.below(len + 1);
                    let b = self.byte(dictionary);
                    data.insert(i, b);
                }
                2 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(16));
                    data.drain(i..i + n);
                }
                3 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(64));
                    let span: Vec<u8> = data[i..i + n].to_vec();
                    let at = self.below(data.len() + 1);
                    data.splice(at..at, span);
                }
                4 if !dictionary.is_empty() => {
                    let at = self.below(len + 1);
                    let word = self.pick(dictionary).as_bytes().to_vec();
                    data.splice(at..at, word);
                }
                5 if len > 0 => {
                    // Truncate: a file cut short.
                    let at = self.below(len);
                    data.truncate(at);
                }
                6 => {
                    // Swap two lines.
                    let mut lines: Vec<Vec<u8>> =
                        data.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                    if lines.len() > 1 {
                        let a = self.below(lines.len());
                        let b = self.below(lines.len());
                        lines.swap(a, b);
                        data = lines.join(&b'\n');
                    }
                }
                7 if len > 0 => {
                    // Replace a byte with one that is special to the format.
                    let i = self.below(len);
                    data[i] = self.byte(dictionary);
                }
                _ if len > 0 => {
                    // Overwrite a span with a copy of another.
                    let i = self.below(len);
                    let j = self.below(len);
                    let n = 1 + self.below((len - i.max(j)).min(32));
                    let span: Vec<u8> = data[j..j + n].to_vec();
                    data[i..i + n].copy_from_slice(&span);
                }
                _ => data.push(self.byte(dictionary)),
            }
        }
        data
    }
}

/// How many cases a run tries: `FUZZ_CASES`, else `default`.
pub fn cases(default: u64) -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `case` with a fresh generator for each case number; `FUZZ_SEED` replays one case.
/// A panic (or a property the case asserts) fails the test with the seed that replays it.
pub fn run(target: &str, default_cases: u64, mut case: impl FnMut(&mut Rng)) {
    let base: u64 = std::env::var("FUZZ_BASE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    if let Some(seed) = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()) {
        case(&mut Rng::new(seed));
        return;
    }
    for n in 0..cases(default_cases) {
        let seed = base.wrapping_add(n);
        let outcome = catch_unwind(AssertUnwindSafe(|| case(&mut Rng::new(seed))));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "fuzz target {target}: case {n} failed: {message}\n\
                 replay with FUZZ_SEED={seed} cargo test {target}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_input() {
        let a = Rng::new(7).mutate(b"key: value\n", &["${x}"]);
        let b = Rng::new(7).mutate(b"key: value\n", &["${x}"]);
        assert_eq!(a, b);
        let mut rng = Rng::new(1);
        let distinct: std::collections::BTreeSet<Vec<u8>> = (0..100)
            .map(|_| rng.mutate(b"key: value\n", &["${x}"]))
            .collect();
        assert!(distinct.len() > 80, "{}", distinct.len());
    }

    #[test]
    fn below_stays_below() {
        let mut rng = Rng::new(3);
        for n in [1usize, 2, 7, 1000] {
            assert!((0..1000).all(|_| rng.below(n) < n));
        }
        assert_eq!(rng.below(0), 0);
    }

    #[test]
    fn a_failing_case_names_its_seed() {
        let failed = catch_unwind(|| run("demo", 50, |rng| assert!(rng.below(10) != 3, "three")));
        let message = failed.unwrap_err().downcast::<String>().unwrap();
        assert!(
            message.contains("FUZZ_SEED=") && message.contains("three"),
            "{message}"
        );
    }
}
