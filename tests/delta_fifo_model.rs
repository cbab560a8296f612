//! Randomized DeltaFIFO runs against the reference model (`kube_informer::testing::fifo_model`), seeded and
//! reproducible: a failure prints its seed; `FIFO_MODEL_SEED=<n>` replays one, `FIFO_MODEL_RUNS=<n>` runs more.

use kube_informer::testing::fifo_model::{FifoOp, check};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn ops(seed: u64) -> Vec<FifoOp> {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let len = 1 + r.below(80) as usize;
    let mut value = 0u32;
    let mut item = |r: &mut Rng| {
        value += 1;
        (r.below(12) as u8, value)
    };
    (0..len)
        .map(|_| match r.below(10) {
            0 | 1 => {
                let (k, v) = item(&mut r);
                FifoOp::Add(k, v)
            }
            2 | 3 => {
                let (k, v) = item(&mut r);
                FifoOp::Update(k, v)
            }
            4 => FifoOp::Delete(r.below(12) as u8),
            5 => {
                let n = r.below(10) as usize;
                let items = (0..n).map(|_| item(&mut r)).collect::<Vec<_>>();
                FifoOp::Replace {
                    pops_after: r.below(n as u64 + 1) as usize,
                    pops: r.below(4) as usize,
                    items,
                }
            }
            6 => FifoOp::AbortedReplace((0..r.below(5)).map(|_| item(&mut r)).collect()),
            7 => FifoOp::Resync,
            _ => FifoOp::Pop,
        })
        .collect()
}

#[test]
fn random_operation_sequences_match_the_model() {
    if let Ok(seed) = std::env::var("FIFO_MODEL_SEED") {
        let seed: u64 = seed.parse().expect("FIFO_MODEL_SEED is a number");
        check(&ops(seed)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        return;
    }
    let runs: u64 = std::env::var("FIFO_MODEL_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    for seed in 1..=runs {
        if let Err(e) = check(&ops(seed)) {
            panic!(
                "seed {seed} (replay with FIFO_MODEL_SEED={seed}): {e}\nops: {:?}",
                ops(seed)
            );
        }
    }
}
