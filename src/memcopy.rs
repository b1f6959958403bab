//! `memcpy` and `memmove` for the static (musl) x86-64 build.
//!
//! musl's x86-64 `memcpy` copies with `rep movsq` whatever the size, and a
//! string instruction is slow to start; Rust calls `memcpy` for every move
//! of a value whose size is unknown or large (a request's future, starlark's
//! syntax tree cloned from the cache, buffers). In a profile of 10 resources
//! at 16 at once musl's `memcpy` is the hottest symbol of the worker
//! processes, twice its share under glibc (docs/architecture.md, "The
//! shipped binary").
//! Here a copy of up to 64 bytes is a few unaligned loads and stores, one
//! of up to 2 KiB a loop moving 32 bytes a turn, and a longer one `rep movsb`,
//! which processors with fast string moves (ERMS) run at full speed.
//!
//! The symbols are defined only in optimised musl builds: the linker then
//! takes them instead of musl's (`memmove` must be ours too, since musl's
//! jumps into its own `memcpy`). Everywhere else the functions are plain
//! ones, so the unit tests below run them on any x86-64 build.

use core::arch::asm;
use core::ptr::{read_unaligned, write_unaligned};

/// Copies up to 64 bytes: every load before any store, so the two ranges
/// may overlap.
///
/// # Safety
/// `src` is readable and `dst` writable for `len` bytes, `len <= 64`.
#[inline]
unsafe fn short(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY (all blocks): the caller's ranges; each access ends at or
    // before `len`, and `read_unaligned`/`write_unaligned` need no
    // alignment.
    unsafe {
        if len >= 32 {
            let first = read_unaligned(src.cast::<u128>());
            let second = read_unaligned(src.add(16).cast::<u128>());
            let penult = read_unaligned(src.add(len - 32).cast::<u128>());
            let last = read_unaligned(src.add(len - 16).cast::<u128>());
            write_unaligned(dst.cast::<u128>(), first);
            write_unaligned(dst.add(16).cast::<u128>(), second);
            write_unaligned(dst.add(len - 32).cast::<u128>(), penult);
            write_unaligned(dst.add(len - 16).cast::<u128>(), last);
        } else if len >= 16 {
            head_and_tail::<u128>(dst, src, len);
        } else if len >= 8 {
            head_and_tail::<u64>(dst, src, len);
        } else if len >= 4 {
            head_and_tail::<u32>(dst, src, len);
        } else if len > 0 {
            // 1 to 3 bytes: the first, the middle and the last.
            let first = *src;
            let middle = *src.add(len / 2);
            let last = *src.add(len - 1);
            *dst = first;
            *dst.add(len / 2) = middle;
            *dst.add(len - 1) = last;
        }
    }
}

/// Copies `len` bytes, `size_of::<T>() <= len <= 2 * size_of::<T>()`, as
/// the first and the last `T` (overlapping in the middle), both loaded
/// before either is stored. `T` is a plain integer: a fixed-size copy the
/// compiler makes two moves, never a call to `memcpy`.
///
/// # Safety
/// `src` is readable and `dst` writable for `len` bytes.
#[inline]
unsafe fn head_and_tail<T: Copy>(dst: *mut u8, src: *const u8, len: usize) {
    let tail = len - size_of::<T>();
    // SAFETY: the caller's ranges; both accesses end at or before `len`,
    // and unaligned reads and writes need no alignment.
    unsafe {
        let first = read_unaligned(src.cast::<T>());
        let last = read_unaligned(src.add(tail).cast::<T>());
        write_unaligned(dst.cast::<T>(), first);
        write_unaligned(dst.add(tail).cast::<T>(), last);
    }
}

/// Copies `n` bytes front to back: right for disjoint ranges and for
/// `dst` below `src`.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes.
#[inline]
unsafe fn forward(dst: *mut u8, src: *const u8, n: usize) {
    if n <= 64 {
        // SAFETY: the caller's ranges.
        unsafe { short(dst, src, n) };
    } else if n <= 2048 {
        // 32 bytes a turn; the last 32 are loaded before anything is
        // stored and written at the end, so a `dst` below an overlapping
        // `src` reads nothing it has already overwritten. (A loop in Rust
        // could be turned back into a call to `memcpy` by the optimiser.)
        // SAFETY: `n > 64`, so every access lies in the caller's ranges.
        unsafe {
            asm!(
                "movdqu xmm2, [rsi + rdx - 32]",
                "movdqu xmm3, [rsi + rdx - 16]",
                "lea r8, [rdi + rdx - 32]",
                "2:",
                "movdqu xmm0, [rsi]",
                "movdqu xmm1, [rsi + 16]",
                "movdqu [rdi], xmm0",
                "movdqu [rdi + 16], xmm1",
                "add rsi, 32",
                "add rdi, 32",
                "sub rdx, 32",
                "cmp rdx, 32",
                "ja 2b",
                "movdqu [r8], xmm2",
                "movdqu [r8 + 16], xmm3",
                inout("rdx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                out("r8") _,
                out("xmm0") _,
                out("xmm1") _,
                out("xmm2") _,
                out("xmm3") _,
                options(nostack),
            );
        }
    } else {
        // SAFETY: `rep movsb` copies `rcx` bytes from `rsi` to `rdi` upward
        // (the ABI keeps the direction flag clear), a byte at a time as far
        // as the program can tell, so a lower overlapping `dst` is fine.
        unsafe {
            asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// `memcpy`: the ranges do not overlap.
///
/// # Safety
/// As C's `memcpy`.
#[cfg_attr(
    all(target_env = "musl", not(debug_assertions), not(test)),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's ranges.
    unsafe { forward(dst, src, n) };
    dst
}

/// `memmove`: the ranges may overlap.
///
/// # Safety
/// As C's `memmove`.
#[cfg_attr(
    all(target_env = "musl", not(debug_assertions), not(test)),
    unsafe(no_mangle)
)]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // `dst - src`, unsigned, is at least `n` when `dst` starts at or past
    // the end of `src`, or below `src` (it wraps to a large number).
    if n <= 64 || (dst as usize).wrapping_sub(src as usize) >= n {
        // SAFETY: the caller's ranges; `short` loads before it stores.
        unsafe { forward(dst, src, n) };
        return dst;
    }
    // `dst` overlaps the end of `src`: copy back to front, from the last
    // byte down, then clear the direction flag again as the ABI wants.
    // SAFETY: the caller's ranges; `n > 64`, so `n - 1` is in both.
    unsafe {
        asm!(
            "std",
            "rep movsb",
            "cld",
            inout("rcx") n => _,
            inout("rdi") dst.add(n - 1) => _,
            inout("rsi") src.add(n - 1) => _,
            options(nostack),
        );
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::{memcpy, memmove};

    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| u8::try_from((i * 7 + 3) % 251).unwrap_or(0))
            .collect()
    }

    #[test]
    fn copies_every_length_at_every_alignment() {
        for n in (0..300).chain([1000, 2047, 2048, 2049, 5000]) {
            for offset in 0..8 {
                let src = pattern(n + 8);
                let mut dst = vec![0xAA; n + 16];
                // SAFETY: both buffers hold `offset + n` bytes and more.
                let out = unsafe { memcpy(dst.as_mut_ptr().add(offset), src.as_ptr().add(1), n) };
                assert_eq!(out, dst[offset..].as_mut_ptr());
                assert_eq!(
                    &dst[offset..offset + n],
                    &src[1..=n],
                    "n {n} offset {offset}"
                );
                assert!(dst[..offset].iter().all(|&b| b == 0xAA), "before, n {n}");
                assert!(dst[offset + n..].iter().all(|&b| b == 0xAA), "after, n {n}");
            }
        }
    }

    #[test]
    fn moves_overlapping_ranges_either_way() {
        for n in (0..300).chain([1000, 2047, 2048, 2049, 5000]) {
            for shift in [1, 3, 8, 15, 16, 31, 33, 64, 65, 100] {
                // `dst` past `src` (copied back to front) and before it.
                for (from, to) in [(0, shift), (shift, 0)] {
                    let mut buffer = pattern(n + shift);
                    let mut want = buffer.clone();
                    want.copy_within(from..from + n, to);
                    // SAFETY: both ranges lie in `buffer`.
                    unsafe {
                        let base = buffer.as_mut_ptr();
                        memmove(base.add(to), base.add(from), n);
                    }
                    assert_eq!(buffer, want, "n {n} from {from} to {to}");
                }
            }
        }
    }
}
