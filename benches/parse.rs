//! LIBSVM parsing throughput (bytes of text per second) on two synthetic ~50 MB files:
//! one shaped like a9a (sparse, ~14 of 123 binary features per row) and one like
//! KDD Cup 99 (38 dense float features per row).
//!
//! Run with `cargo bench --bench parse`.

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use fwsvm::data::read_libsvm;
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::time::Duration;

/// Approximate size of each generated file.
const TARGET_BYTES: usize = 50 << 20;

/// A tiny deterministic generator (SplitMix64), so the files are the same each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// a9a-like rows: `±1` then 14 ascending indices out of 123, each `:1`.
fn a9a_like() -> String {
    let mut rng = Rng(1);
    let mut s = String::with_capacity(TARGET_BYTES + 4096);
    while s.len() < TARGET_BYTES {
        s.push_str(if rng.below(4) == 0 { "+1" } else { "-1" });
        // 14 distinct indices: one from each of 14 consecutive blocks of 123/14.
        for k in 0..14u64 {
            let lo = k * 123 / 14;
            let hi = (k + 1) * 123 / 14;
            let idx = lo + rng.below(hi - lo) + 1;
            write!(s, " {idx}:1").unwrap();
        }
        s.push('\n');
    }
    s
}

/// KDD-like rows: `±1` then 38 features with a mix of counts, byte sizes and rates.
fn kdd_like() -> String {
    let mut rng = Rng(2);
    let mut s = String::with_capacity(TARGET_BYTES + 4096);
    while s.len() < TARGET_BYTES {
        s.push_str(if rng.below(5) == 0 { "1" } else { "-1" });
        for j in 1..=38u64 {
            match j % 4 {
                0 => write!(s, " {j}:{}", rng.below(100_000)).unwrap(),
                1 => write!(s, " {j}:{}", rng.below(512)).unwrap(),
                _ => write!(s, " {j}:0.{:02}", rng.below(100)).unwrap(),
            }
        }
        s.push('\n');
    }
    s
}

fn bench_parse(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut group = c.benchmark_group("read_libsvm");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, text) in [("a9a-like", a9a_like()), ("kdd99-like", kdd_like())] {
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .expect("write the benchmark file");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(read_libsvm(black_box(&path)).expect("parse")))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
