//! A kernel's signature as the host sees it: what [`kernel!`](crate::kernel) records for each
//! kernel when the kernels crate is compiled for the host, and what a typed launcher
//! (`nvptx-launch`) checks a launch's arguments against at compile time.
//!
//! Pointers become markers ([`ConstPtr`], [`MutPtr`]) so that the host can tell a buffer the
//! kernel only reads from one it writes; scalars stay themselves. Nothing here depends on a
//! driver API: the mapping from markers to device buffers lives in the host crate.

use core::marker::PhantomData;

/// A kernel declared with [`kernel!`](crate::kernel): its PTX symbol and its parameter types.
///
/// ```
/// use nvptx_std::launch::{ConstPtr, Kernel, MutPtr};
///
/// nvptx_std::kernel! {
///     /// `y = a * x + y`.
///     pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {}
/// }
/// assert_eq!(saxpy::NAME, "saxpy");
/// let _: fn(<saxpy as Kernel>::Params) = |_: (f32, ConstPtr<f32>, MutPtr<f32>, u64)| {};
/// ```
pub trait Kernel {
    /// The kernel's PTX symbol (`.entry` name): the function's name.
    const NAME: &'static str;
    /// The parameters, in order, as a tuple of [`KernelParam::Host`] types.
    type Params;
}

/// A type a kernel may take as a parameter, and what the host passes for it: a scalar is passed
/// by value as itself; a pointer is device memory, read-only ([`ConstPtr`]) or writable
/// ([`MutPtr`]).
///
/// ```
/// use nvptx_std::launch::{ConstPtr, KernelParam, MutPtr};
///
/// let _: fn(<*const u8 as KernelParam>::Host) = |_: ConstPtr<u8>| {};
/// let _: fn(<*mut f32 as KernelParam>::Host) = |_: MutPtr<f32>| {};
/// let _: fn(<u32 as KernelParam>::Host) = |_: u32| {};
/// ```
pub trait KernelParam {
    /// What the host passes: the scalar itself, or a pointer marker.
    type Host;
}

/// A `*const T` kernel parameter: device memory of `T` that the kernel reads.
///
/// A marker type, never constructed: the host passes a read-only device buffer for it.
///
/// ```
/// use nvptx_std::launch::{ConstPtr, KernelParam};
/// let _: fn(<*const i32 as KernelParam>::Host) = |_: ConstPtr<i32>| {};
/// ```
pub struct ConstPtr<T>(PhantomData<*const T>, Never);

/// A `*mut T` kernel parameter: device memory of `T` that the kernel may write.
///
/// A marker type, never constructed: the host passes a writable device buffer for it.
///
/// ```
/// use nvptx_std::launch::{KernelParam, MutPtr};
/// let _: fn(<*mut i32 as KernelParam>::Host) = |_: MutPtr<i32>| {};
/// ```
pub struct MutPtr<T>(PhantomData<*mut T>, Never);

/// Makes the markers uninhabited: they exist as types only.
enum Never {}

impl<T> KernelParam for *const T {
    type Host = ConstPtr<T>;
}

impl<T> KernelParam for *mut T {
    type Host = MutPtr<T>;
}

macro_rules! scalar_params {
    ($($t:ty),*) => {
        $(
            impl KernelParam for $t {
                type Host = $t;
            }
        )*
    };
}
scalar_params!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);
