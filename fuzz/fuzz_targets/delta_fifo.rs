//! The informer's queues against their reference model: any sequence of add / update / delete / streamed replace
//! (with pops interleaved) / aborted replace / resync / pop keeps each queue's invariants — a RealFIFO pops every
//! reported change once, in order —, and once drained the store equals the server's state
//! (`kube_informer::unstable::fifo_model::check` for the DeltaFIFO, `check_real` for the RealFIFO; each input runs
//! through both).

#![no_main]

use kube_informer::unstable::fifo_model::{FifoOp, check, check_real};
use libfuzzer_sys::fuzz_target;

/// Turns bytes into operations: one opcode byte, then the operands it needs (missing bytes read as 0).
fn ops(data: &[u8]) -> Vec<FifoOp> {
    let mut it = data.iter().copied();
    let mut next = || it.next();
    let mut out = Vec::new();
    let mut value = 0u32;
    while let Some(op) = next() {
        let mut byte = || next().unwrap_or(0);
        let mut item = |k: u8| {
            value += 1;
            (k % 16, value)
        };
        out.push(match op % 8 {
            0 => FifoOp::Add(byte() % 16, {
                value += 1;
                value
            }),
            1 => FifoOp::Update(byte() % 16, {
                value += 1;
                value
            }),
            2 => FifoOp::Delete(byte() % 16),
            3 => {
                let n = usize::from(byte() % 12);
                let items: Vec<_> = (0..n).map(|_| item(byte())).collect();
                let pops_after = usize::from(byte()) % (n + 1);
                let pops = usize::from(byte() % 5);
                FifoOp::Replace {
                    items,
                    pops_after,
                    pops,
                }
            }
            4 => {
                let n = usize::from(byte() % 6);
                FifoOp::AbortedReplace((0..n).map(|_| item(byte())).collect())
            }
            5 => FifoOp::Resync,
            _ => FifoOp::Pop,
        });
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let ops = ops(data);
    if let Err(e) = check(&ops) {
        panic!("DeltaFIFO: {e}\nops: {ops:?}");
    }
    if let Err(e) = check_real(&ops) {
        panic!("RealFIFO: {e}\nops: {ops:?}");
    }
});
