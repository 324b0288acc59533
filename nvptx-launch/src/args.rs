//! Kernel arguments as the compiler checks them ([`KernelArg`], [`KernelArgs`]).

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, SyncOnDrop};
use nvptx_std::launch::{ConstPtr, MutPtr};
use std::ffi::c_void;

/// One kernel parameter's bytes, 16-byte aligned, and the stream-ordering guard of the buffer
/// it points to (dropped after the launch is enqueued, which records the access).
#[doc(hidden)]
pub struct Param<'a> {
    value: Slot,
    _sync: Option<SyncOnDrop<'a>>,
}

#[repr(C, align(16))]
struct Slot([u8; 16]);

impl Param<'_> {
    fn scalar<T: Copy>(value: T) -> Self {
        const { assert!(size_of::<T>() <= 16) };
        let mut slot = Slot([0; 16]);
        // SAFETY: `T` is a plain scalar of at most 16 bytes (checked above), copied bytewise.
        unsafe { std::ptr::copy_nonoverlapping(&value as *const T as *const u8, slot.0.as_mut_ptr(), size_of::<T>()) };
        Self { value: slot, _sync: None }
    }

    /// The pointer `cuLaunchKernelEx` reads this parameter through; valid while `self` lives.
    pub(crate) fn as_kernel_param(&mut self) -> *mut c_void {
        self.value.0.as_mut_ptr().cast()
    }
}

impl<'a> Param<'a> {
    fn pointer(ptr: u64, sync: SyncOnDrop<'a>) -> Self {
        let mut param = Self::scalar(ptr);
        param._sync = Some(sync);
        param
    }
}

/// A host value that may be passed for a kernel parameter whose host type is `P`
/// (`nvptx_std::launch::KernelParam::Host`):
///
/// | kernel parameter | host argument |
/// | --- | --- |
/// | `*const T` ([`ConstPtr<T>`]) | `&CudaSlice<T>`, `&CudaView<T>`, `&CudaViewMut<T>` |
/// | `*mut T` ([`MutPtr<T>`]) | `&mut CudaSlice<T>`, `&mut CudaViewMut<T>` |
/// | a scalar (`u32`, `f32`, ...) | a value of exactly that type |
///
/// Device buffers take part in cudarc's stream ordering as its own launches do: the launch waits
/// for earlier writes of every buffer it reads and for earlier reads and writes of every buffer
/// it writes, and records its own accesses.
///
/// ```
/// use cudarc::driver::CudaSlice;
/// use nvptx_launch::{ConstPtr, KernelArg, MutPtr};
/// fn passes<P, A: KernelArg<P>>() {}
/// passes::<ConstPtr<f32>, &CudaSlice<f32>>();
/// passes::<MutPtr<f32>, &mut CudaSlice<f32>>();
/// passes::<u64, u64>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of host type `{P}`",
    label = "not a `{P}` argument",
    note = "a `*const T` parameter (ConstPtr<T>) takes `&CudaSlice<T>` or `&CudaView<T>`; a `*mut T` parameter (MutPtr<T>) takes `&mut CudaSlice<T>` or `&mut CudaViewMut<T>`; a scalar parameter takes a value of exactly its type"
)]
pub trait KernelArg<P> {
    /// The parameter's bytes for `stream`, ordering buffer accesses as cudarc's launches do.
    #[doc(hidden)]
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a;
}

impl<T> KernelArg<ConstPtr<T>> for &CudaSlice<T> {
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a,
    {
        let (ptr, sync) = self.device_ptr(stream);
        Param::pointer(ptr, sync)
    }
}

impl<T> KernelArg<ConstPtr<T>> for &CudaView<'_, T> {
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a,
    {
        let (ptr, sync) = self.device_ptr(stream);
        Param::pointer(ptr, sync)
    }
}

impl<T> KernelArg<ConstPtr<T>> for &CudaViewMut<'_, T> {
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a,
    {
        let (ptr, sync) = self.device_ptr(stream);
        Param::pointer(ptr, sync)
    }
}

impl<T> KernelArg<MutPtr<T>> for &mut CudaSlice<T> {
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a,
    {
        let (ptr, sync) = self.device_ptr_mut(stream);
        Param::pointer(ptr, sync)
    }
}

impl<T> KernelArg<MutPtr<T>> for &mut CudaViewMut<'_, T> {
    fn into_param<'a>(self, stream: &'a CudaStream) -> Param<'a>
    where
        Self: 'a,
    {
        let (ptr, sync) = self.device_ptr_mut(stream);
        Param::pointer(ptr, sync)
    }
}

macro_rules! scalar_args {
    ($($t:ty),*) => {
        $(
            impl KernelArg<$t> for $t {
                fn into_param<'a>(self, _stream: &'a CudaStream) -> Param<'a>
                where
                    Self: 'a,
                {
                    Param::scalar(self)
                }
            }
        )*
    };
}
scalar_args!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

/// A tuple of arguments, one [`KernelArg`] per parameter of a kernel whose parameter list is `P`
/// (`nvptx_std::launch::Kernel::Params`), in order (up to 16).
///
/// ```
/// use cudarc::driver::CudaSlice;
/// use nvptx_launch::{ConstPtr, KernelArgs, MutPtr};
/// fn passes<P, A: KernelArgs<P>>() {}
/// passes::<(f32, ConstPtr<f32>, MutPtr<f32>, u64), (f32, &CudaSlice<f32>, &mut CudaSlice<f32>, u64)>();
/// ```
#[diagnostic::on_unimplemented(
    message = "the arguments `{Self}` do not match the kernel's parameters `{P}`",
    label = "one argument per kernel parameter, in order",
    note = "pass a tuple with one argument per parameter: `&mut CudaSlice<T>` for `*mut T`, `&CudaSlice<T>` for `*const T`, the value for a scalar"
)]
pub trait KernelArgs<P> {
    /// Every parameter's bytes, in order.
    #[doc(hidden)]
    fn into_params<'a>(self, stream: &'a CudaStream) -> Vec<Param<'a>>
    where
        Self: 'a;
}

macro_rules! tuple_args {
    ($($a:ident $p:ident),*) => {
        impl<$($a, $p),*> KernelArgs<($($p,)*)> for ($($a,)*)
        where
            $($a: KernelArg<$p>),*
        {
            #[allow(non_snake_case, unused_variables)]
            fn into_params<'a>(self, stream: &'a CudaStream) -> Vec<Param<'a>>
            where
                Self: 'a,
            {
                let ($($a,)*) = self;
                vec![$($a.into_param(stream)),*]
            }
        }
    };
}
tuple_args!();
tuple_args!(A0 P0);
tuple_args!(A0 P0, A1 P1);
tuple_args!(A0 P0, A1 P1, A2 P2);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10, A11 P11);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10, A11 P11, A12 P12);
tuple_args!(A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10, A11 P11, A12 P12, A13 P13);
tuple_args!(
    A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10, A11 P11, A12 P12, A13 P13, A14 P14
);
tuple_args!(
    A0 P0, A1 P1, A2 P2, A3 P3, A4 P4, A5 P5, A6 P6, A7 P7, A8 P8, A9 P9, A10 P10, A11 P11, A12 P12, A13 P13, A14 P14,
    A15 P15
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_passed_as_their_own_bytes_at_the_start_of_an_aligned_slot() {
        let mut p = Param::scalar(0x1122_3344u32);
        assert_eq!(&p.value.0[..4], &0x1122_3344u32.to_ne_bytes());
        assert_eq!(p.as_kernel_param() as usize % 16, 0);
        let p = Param::scalar(-2.5f64);
        assert_eq!(&p.value.0[..8], &(-2.5f64).to_ne_bytes());
    }
}
