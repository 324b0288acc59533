// Over 600 lines with its documentation: about 380 lines of code; the rest are doc comments with
// examples and 260 lines of unit tests.
//! Files in and out: 2-D `f32` matrices and histogram inputs as `.npy` files (headers parsed and
//! files written by `npyz`), and raw little-endian files of a named element type.
//!
//! Every input is checked whole before any GPU work (its header's dtype, dimensions and order,
//! and its length against the header), so a bad file is reported as such on any machine, naming
//! the file and the problem. An output is written under a temporary name beside its target and
//! renamed into place only when complete, so a failure never leaves half a file behind.

use crate::error::{Error, Result};
use npyz::WriterBuilder;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The first bytes of every `.npy` file.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Element types of histogram inputs: only those the histogram kernels count. A kernel for a new
/// input type adds its variant here (name, `.npy` dtype, size), and `--type`, `.npy` dtype
/// selection and the error messages that list the supported types follow.
///
/// ```
/// use hopper_kernels::io::ElementType;
/// assert_eq!("I32".parse::<ElementType>(), Ok(ElementType::I32));
/// assert_eq!(ElementType::U16.to_string(), "u16");
/// assert_eq!("f64".parse::<ElementType>().unwrap_err(), "unknown value type `f64`: choose from u8, u16, i32, f32");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Unsigned bytes (`.npy` dtype `|u1`).
    U8,
    /// Unsigned 16-bit integers (`.npy` dtype `<u2`).
    U16,
    /// 32-bit signed integers (`.npy` dtype `<i4`).
    I32,
    /// 32-bit floats (`.npy` dtype `<f4`), counted over a `--range`.
    F32,
}

impl ElementType {
    /// Every supported type.
    pub const ALL: [Self; 4] = [Self::U8, Self::U16, Self::I32, Self::F32];

    /// The name `--type` takes.
    ///
    /// ```
    /// use hopper_kernels::io::ElementType;
    /// let names: Vec<&str> = ElementType::ALL.iter().map(|t| t.name()).collect();
    /// assert_eq!(names, ["u8", "u16", "i32", "f32"]);
    /// ```
    pub fn name(self) -> &'static str {
        self.input_type().name()
    }

    /// The `.npy` dtype string of this type, little-endian.
    ///
    /// ```
    /// use hopper_kernels::io::ElementType;
    /// assert_eq!(ElementType::U8.npy_descr(), "|u1"); // bytes have no byte order
    /// assert_eq!(ElementType::U16.npy_descr(), "<u2");
    /// ```
    pub fn npy_descr(self) -> &'static str {
        match self {
            Self::U8 => "|u1",
            Self::U16 => "<u2",
            Self::I32 => "<i4",
            Self::F32 => "<f4",
        }
    }

    /// Bytes per value.
    ///
    /// ```
    /// use hopper_kernels::io::ElementType;
    /// let sizes: Vec<u64> = ElementType::ALL.iter().map(|t| t.size()).collect();
    /// assert_eq!(sizes, [1, 2, 4, 4]);
    /// ```
    pub fn size(self) -> u64 {
        self.input_type().size() as u64
    }

    /// The histogram kernels' tag of this type.
    ///
    /// ```
    /// use hopper_kernels::{histogram::InputType, io::ElementType};
    /// assert_eq!(ElementType::F32.input_type(), InputType::F32);
    /// assert_eq!(ElementType::U8.input_type().name(), ElementType::U8.name());
    /// ```
    pub fn input_type(self) -> kernels::histogram::InputType {
        use kernels::histogram::InputType;
        match self {
            Self::U8 => InputType::U8,
            Self::U16 => InputType::U16,
            Self::I32 => InputType::I32,
            Self::F32 => InputType::F32,
        }
    }

    /// The type a `.npy` dtype string stores, if it is supported.
    ///
    /// ```
    /// use hopper_kernels::io::ElementType;
    /// assert_eq!(ElementType::from_npy_descr("<i4"), Some(ElementType::I32));
    /// assert_eq!(ElementType::from_npy_descr(">i4"), None); // big-endian
    /// assert_eq!(ElementType::from_npy_descr("<f8"), None); // float64
    /// ```
    pub fn from_npy_descr(descr: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.npy_descr() == descr)
    }

    /// `i32 ('<i4')`, ...: the supported types, for error messages.
    ///
    /// ```
    /// use hopper_kernels::io::ElementType;
    /// assert_eq!(ElementType::supported(), "u8 ('|u1'), u16 ('<u2'), i32 ('<i4'), f32 ('<f4')");
    /// ```
    pub fn supported() -> String {
        Self::ALL.iter().map(|t| format!("{} ('{}')", t.name(), t.npy_descr())).collect::<Vec<_>>().join(", ")
    }
}

named_enum!(ElementType, "value type");

/// A row-major (C order) `f32` matrix.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::Matrix;
/// // [1 2 3; 4 5 6], row after row.
/// let m = Matrix::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// assert_eq!(m.data[m.cols + 2], 6.0); // row 1, column 2
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub data: Vec<f32>,
}

impl Matrix {
    /// A matrix of `rows x cols` from its values in row-major order; fails unless there are
    /// exactly `rows * cols` of them.
    ///
    /// ```
    /// use hopper_kernels::Matrix;
    /// assert!(Matrix::new(2, 3, vec![0.0; 6]).is_ok());
    /// let err = Matrix::new(2, 3, vec![0.0; 5]).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid argument: a 2x3 matrix has 6 values, not 5");
    /// ```
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Result<Self> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::InvalidArgument(format!(
                "a {rows}x{cols} matrix has {} values, not {}",
                rows as u128 * cols as u128,
                data.len()
            )));
        }
        Ok(Self { rows, cols, data })
    }
}

/// A `.npy` file's header, as far as this crate reads it.
#[derive(Debug, Clone)]
struct NpyLayout {
    /// The dtype string (`<f4`), or the structured dtype's Python form.
    descr: String,
    shape: Vec<u64>,
    fortran_order: bool,
    /// Where the data starts.
    data_offset: u64,
    /// The whole file's length.
    file_len: u64,
}

fn file_error(path: &Path, problem: impl Into<String>) -> Error {
    Error::File { path: path.to_path_buf(), problem: problem.into() }
}

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| {
        file_error(
            path,
            match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => format!("cannot open it: {e}"),
            },
        )
    })
}

/// numpy's name of a dtype string (`<f8` is `float64`), for error messages.
fn numpy_name(descr: &str) -> String {
    let mut chars = descr.chars();
    let order = chars.next();
    let kind = chars.next();
    let size: Option<u32> = chars.as_str().parse().ok();
    let base = match (kind, size) {
        (Some('f'), Some(s)) => format!("float{}", 8 * s),
        (Some('i'), Some(s)) => format!("int{}", 8 * s),
        (Some('u'), Some(s)) => format!("uint{}", 8 * s),
        (Some('c'), Some(s)) => format!("complex{}", 8 * s),
        (Some('b'), _) => "bool".to_string(),
        _ => return format!("'{descr}'"),
    };
    if order == Some('>') { format!("big-endian {base} ('{descr}')") } else { format!("{base} ('{descr}')") }
}

fn read_npy_layout(path: &Path) -> Result<NpyLayout> {
    let mut file = open(path)?;
    let file_len = file.metadata().map_err(|e| file_error(path, format!("cannot read its metadata: {e}")))?.len();
    let mut magic = [0u8; NPY_MAGIC.len()];
    let has_magic = file.read_exact(&mut magic).is_ok() && magic == NPY_MAGIC;
    if !has_magic {
        return Err(file_error(path, "not a .npy file (it does not start with the .npy magic \\x93NUMPY)"));
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| file_error(path, format!("cannot seek: {e}")))?;
    let mut reader = BufReader::new(file);
    let header = npyz::NpyHeader::from_reader(&mut reader)
        .map_err(|e| file_error(path, format!("the .npy header is not valid: {e}")))?;
    // BufReader's position counts what it has buffered but not handed out: the header's end.
    let data_offset = reader.stream_position().map_err(|e| file_error(path, format!("cannot seek: {e}")))?;
    let descr = match header.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    Ok(NpyLayout {
        descr,
        shape: header.shape().to_vec(),
        fortran_order: header.order() == npyz::Order::Fortran,
        data_offset,
        file_len,
    })
}

/// Values the shape holds, and checks that the file holds exactly their bytes after the header.
fn check_data_len(path: &Path, layout: &NpyLayout, size: u64) -> Result<u64> {
    let shape = &layout.shape;
    let count = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|c| c.checked_mul(size).is_some())
        .ok_or_else(|| file_error(path, format!("the shape {shape:?} is too large to address")))?;
    let want = count * size;
    let have = layout.file_len.saturating_sub(layout.data_offset);
    if have < want {
        return Err(file_error(
            path,
            format!("truncated: the shape {shape:?} needs {want} bytes of data, but the file holds {have}"),
        ));
    }
    if have > want {
        return Err(file_error(
            path,
            format!("{} bytes follow the {want} bytes of data that the shape {shape:?} describes", have - want),
        ));
    }
    Ok(count)
}

/// Reads a 2-D `float32` `.npy` file in C order. Fails, naming the file, on a missing file, a
/// file that is not `.npy`, another dtype, another number of dimensions, Fortran order, or data
/// shorter or longer than the shape.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.npy");
/// let a = hopper_kernels::io::Matrix::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// hopper_kernels::io::write_matrix(&path, &a)?;
/// assert_eq!(hopper_kernels::io::read_matrix(&path)?, a);
/// # Ok(()) }
/// ```
pub fn read_matrix(path: &Path) -> Result<Matrix> {
    let layout = read_npy_layout(path)?;
    if layout.descr != "<f4" {
        return Err(file_error(
            path,
            format!(
                "dtype {}: matrices must be float32 ('<f4'); convert with a.astype(np.float32)",
                numpy_name(&layout.descr)
            ),
        ));
    }
    if layout.shape.len() != 2 {
        return Err(file_error(
            path,
            format!("{} dimensions (shape {:?}): a matrix has 2", layout.shape.len(), layout.shape),
        ));
    }
    if layout.fortran_order {
        return Err(file_error(
            path,
            "Fortran order: save the matrix in C order (np.save(path, np.ascontiguousarray(a)))",
        ));
    }
    let count = check_data_len(path, &layout, 4)?;
    let (rows, cols) = (layout.shape[0] as usize, layout.shape[1] as usize);
    let mut data = vec![0f32; count as usize];
    read_exact_at(path, &open(path)?, layout.data_offset, bytemuck::cast_slice_mut(&mut data))?;
    for v in &mut data {
        *v = f32::from_bits(u32::from_le(v.to_bits()));
    }
    Matrix::new(rows, cols, data)
}

fn read_exact_at(path: &Path, file: &File, offset: u64, out: &mut [u8]) -> Result<()> {
    file.read_exact_at(out, offset).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            file_error(path, format!("truncated: it ended before byte {}", offset + out.len() as u64))
        }
        _ => file_error(path, format!("read failed at byte {offset}: {e}")),
    })
}

/// Writes `m` as a 2-D `float32` `.npy` file in C order, under a temporary name renamed to
/// `path` once complete.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Matrix, io};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("c.npy");
/// io::write_matrix(&path, &Matrix::new(1, 2, vec![0.5, -1.0])?)?;
/// // numpy.load reads it as float32 of shape (1, 2); so does read_matrix.
/// assert_eq!(io::read_matrix(&path)?.data, [0.5, -1.0]);
/// # Ok(()) }
/// ```
pub fn write_matrix(path: &Path, m: &Matrix) -> Result<()> {
    OutputFile::create(path)?.write_npy(&[m.rows as u64, m.cols as u64], &m.data)
}

/// Writes `values` as a `.npy` file of the given shape (C order), under a temporary name renamed
/// to `path` once complete.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::io::{self, DataFile, ElementType};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("v.npy");
/// io::write_npy(&path, &[2, 2], &[1u16, 2, 3, 4])?;
/// let file = DataFile::open(&path, None)?;
/// assert_eq!((file.element(), file.len()), (ElementType::U16, 4));
/// // The shape must hold the values.
/// assert!(io::write_npy(&path, &[3], &[1u16, 2]).is_err());
/// # Ok(()) }
/// ```
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], values: &[T]) -> Result<()> {
    OutputFile::create(path)?.write_npy(shape, values)
}

/// An output file being written: a temporary file beside the target, renamed onto it by
/// [`OutputFile::write_npy`]; dropped unwritten (after an error), it is removed. Create it before
/// the work whose result it will hold, so that an unwritable destination fails first.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::io::{OutputFile, read_matrix};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.npy");
/// // Created before the work, so that an unwritable destination fails first.
/// let out = OutputFile::create(&path)?;
/// assert!(!path.exists()); // only a temporary file beside it until the end
/// out.write_npy(&[2, 1], &[1.0f32, 2.0])?;
/// assert_eq!(read_matrix(&path)?.data, [1.0, 2.0]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    temp: tempfile::NamedTempFile,
}

impl OutputFile {
    /// Creates the temporary file in `path`'s directory (the same file system, so the final
    /// rename is atomic).
    /// Fails at once, rather than at the final rename, when `path` is a directory.
    ///
    /// ```
    /// use hopper_kernels::io::OutputFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let err = OutputFile::create(dir.path()).unwrap_err().to_string();
    /// assert!(err.ends_with("is a directory: name the output file (such as out.npy) in it"), "{err}");
    /// assert!(OutputFile::create(&dir.path().join("no/such/dir/out.npy")).is_err());
    /// ```
    pub fn create(path: &Path) -> Result<Self> {
        if path.is_dir() {
            return Err(file_error(path, "is a directory: name the output file (such as out.npy) in it"));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // 0o666 less the umask, as `File::create` makes it: tempfile's default, 0o600, would make
        // every output readable by its owner only.
        let temp = tempfile::Builder::new()
            .prefix(".host-partial-")
            .suffix(".npy")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| file_error(path, format!("cannot create a file in {}: {e}", dir.display())))?;
        Ok(Self { path: path.to_path_buf(), temp })
    }

    /// The path the output will have.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::OutputFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let out = OutputFile::create(&dir.path().join("out.npy"))?;
    /// assert_eq!(out.path(), dir.path().join("out.npy"));
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `values` in `shape` (C order) and renames the file onto its path.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::OutputFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let out = OutputFile::create(&dir.path().join("out.npy"))?;
    /// // 2 x 2 of 1 value: refused, and nothing is left behind, not even the temporary file.
    /// assert!(out.write_npy(&[2, 2], &[1.0f32]).is_err());
    /// assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    /// # Ok(()) }
    /// ```
    pub fn write_npy<T: npyz::AutoSerialize + Copy>(mut self, shape: &[u64], values: &[T]) -> Result<()> {
        let path = self.path.clone();
        let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        if count != Some(values.len() as u64) {
            return Err(Error::InvalidArgument(format!(
                "shape {shape:?} holds {} values, but {} were given",
                count.map_or_else(|| "more than 2^64".to_string(), |c| c.to_string()),
                values.len()
            )));
        }
        let write_failed = |e: std::io::Error| file_error(&path, format!("write failed: {e}"));
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(BufWriter::new(self.temp.as_file_mut()))
            .begin_nd()
            .map_err(write_failed)?;
        writer.extend(values.iter().copied()).map_err(write_failed)?;
        writer.finish().map_err(write_failed)?;
        self.temp.as_file().sync_all().map_err(write_failed)?;
        self.temp
            .persist(&path)
            .map_err(|e| file_error(&path, format!("cannot rename the finished file onto it: {e}")))?;
        Ok(())
    }
}

/// A checked histogram input file: a `.npy` file of a supported dtype (any shape, any order: a
/// histogram does not depend on the values' order), or a raw little-endian file of one
/// [`ElementType`]. Only the header is read when it is opened; the values are read on demand.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::io::{DataFile, ElementType, write_npy};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("v.npy");
/// write_npy(&path, &[3, 4], &(-5..7).collect::<Vec<i32>>())?; // any shape
/// let file = DataFile::open(&path, None)?;
/// assert_eq!((file.element(), file.len(), file.bytes()), (ElementType::I32, 12, 48));
/// assert_eq!(file.read_all_i32()?[..3], [-5, -4, -3]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DataFile {
    path: PathBuf,
    element: ElementType,
    data_offset: u64,
    len: u64,
}

impl DataFile {
    /// A raw file when `raw` names its element type, else a `.npy` file whose dtype picks it.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [1u8, 0, 2, 0]).unwrap();
    /// // A raw file needs its type; read as u16 it holds [1, 2].
    /// assert!(DataFile::open(&path, None).unwrap_err().to_string().contains("give its type with --type"));
    /// assert_eq!(DataFile::open(&path, Some(ElementType::U16))?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn open(path: &Path, raw: Option<ElementType>) -> Result<Self> {
        match raw {
            Some(element) => Self::open_raw(path, element),
            None => Self::open_npy(path),
        }
    }

    /// A `.npy` file; fails unless its dtype is a supported [`ElementType`] and its data matches
    /// its shape.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("f.npy");
    /// write_npy(&path, &[2], &[1.0f64, 2.0])?;
    /// let err = DataFile::open_npy(&path).unwrap_err().to_string();
    /// assert!(err.contains("dtype float64 ('<f8'): the histogram counts u8 ('|u1'), u16"), "{err}");
    /// # Ok(()) }
    /// ```
    pub fn open_npy(path: &Path) -> Result<Self> {
        let layout = read_npy_layout(path).map_err(|e| match e {
            Error::File { path, problem } if problem.starts_with("not a .npy file") => Error::File {
                path,
                problem: format!("{problem}; for a raw little-endian file give its type with --type"),
            },
            e => e,
        })?;
        let element = ElementType::from_npy_descr(&layout.descr).ok_or_else(|| {
            file_error(
                path,
                format!("dtype {}: the histogram counts {}", numpy_name(&layout.descr), ElementType::supported()),
            )
        })?;
        let len = check_data_len(path, &layout, element.size())?;
        Ok(Self { path: path.to_path_buf(), element, data_offset: layout.data_offset, len })
    }

    /// A raw file of little-endian `element` values, no header; fails unless its length is a
    /// whole number of values, and refuses a `.npy` file (its magic and a valid header), whose
    /// header would be counted as values.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let raw = dir.path().join("v.bin");
    /// std::fs::write(&raw, [0u8; 10]).unwrap();
    /// let err = DataFile::open_raw(&raw, ElementType::I32).unwrap_err().to_string();
    /// assert!(err.contains("truncated: 10 bytes is not a whole number of i32 values"), "{err}");
    /// // A .npy file is refused rather than its header counted as values.
    /// let npy = dir.path().join("v.npy");
    /// write_npy(&npy, &[2], &[1i32, 2])?;
    /// assert!(DataFile::open_raw(&npy, ElementType::I32).is_err());
    /// # Ok(()) }
    /// ```
    pub fn open_raw(path: &Path, element: ElementType) -> Result<Self> {
        let mut file = open(path)?;
        let bytes = file.metadata().map_err(|e| file_error(path, format!("cannot read its metadata: {e}")))?.len();
        let mut magic = [0u8; NPY_MAGIC.len()];
        if file.read_exact(&mut magic).is_ok()
            && magic == NPY_MAGIC
            && let Ok(layout) = read_npy_layout(path)
        {
            return Err(file_error(
                path,
                format!(
                    "a .npy file (dtype {}), read as raw {} values its header would be counted: open it as .npy (without --type)",
                    numpy_name(&layout.descr),
                    element.name()
                ),
            ));
        }
        if bytes % element.size() != 0 {
            return Err(file_error(
                path,
                format!(
                    "truncated: {bytes} bytes is not a whole number of {} values ({} bytes each)",
                    element.name(),
                    element.size()
                ),
            ));
        }
        Ok(Self { path: path.to_path_buf(), element, data_offset: 0, len: bytes / element.size() })
    }

    /// The file's path.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [7u8; 3]).unwrap();
    /// assert_eq!(DataFile::open(&path, Some(ElementType::U8))?.path(), path);
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The values' type.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.npy");
    /// write_npy(&path, &[2], &[0.5f32, 1.5])?;
    /// assert_eq!(DataFile::open(&path, None)?.element(), ElementType::F32); // from the dtype
    /// # Ok(()) }
    /// ```
    pub fn element(&self) -> ElementType {
        self.element
    }

    /// Where the values start in the file, bytes (0 for a raw file).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.npy");
    /// write_npy(&path, &[4], &[1u16, 2, 3, 4])?;
    /// let file = DataFile::open(&path, None)?;
    /// // The header, then exactly the values.
    /// assert_eq!(file.data_offset() + file.bytes(), std::fs::metadata(&path).unwrap().len());
    /// let raw = dir.path().join("v.bin");
    /// std::fs::write(&raw, [0u8; 4]).unwrap();
    /// assert_eq!(DataFile::open(&raw, Some(ElementType::U8))?.data_offset(), 0);
    /// # Ok(()) }
    /// ```
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Number of values.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [0u8; 12]).unwrap();
    /// assert_eq!(DataFile::open(&path, Some(ElementType::U16))?.len(), 6);
    /// assert_eq!(DataFile::open(&path, Some(ElementType::I32))?.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file holds no values.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("e.npy");
    /// write_npy::<i32>(&path, &[0], &[])?;
    /// assert!(DataFile::open(&path, None)?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of values.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [0u8; 12]).unwrap();
    /// assert_eq!(DataFile::open(&path, Some(ElementType::U16))?.bytes(), 12);
    /// # Ok(()) }
    /// ```
    pub fn bytes(&self) -> u64 {
        self.len * self.element.size()
    }

    /// Opens the file for [`DataFile::read_i32_at`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [1u8, 0, 0, 0, 2, 0, 0, 0]).unwrap();
    /// let file = DataFile::open(&path, Some(ElementType::I32))?;
    /// let handle = file.reopen()?; // one handle for many reads
    /// let (mut a, mut b) = ([0i32; 1], [0i32; 1]);
    /// file.read_i32_at(&handle, 1, &mut b)?;
    /// file.read_i32_at(&handle, 0, &mut a)?;
    /// assert_eq!((a, b), ([1], [2]));
    /// # Ok(()) }
    /// ```
    pub fn reopen(&self) -> Result<File> {
        open(&self.path)
    }

    /// Reads `out.len()` values starting at value `first` from `file` (this data file, opened by
    /// [`DataFile::reopen`]).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.npy");
    /// write_npy(&path, &[12], &(-5..7).collect::<Vec<i32>>())?;
    /// let file = DataFile::open(&path, None)?;
    /// let mut part = [0i32; 3];
    /// file.read_i32_at(&file.reopen()?, 4, &mut part)?;
    /// assert_eq!(part, [-1, 0, 1]);
    /// assert!(file.read_i32_at(&file.reopen()?, 10, &mut part).is_err()); // past the end
    /// # Ok(()) }
    /// ```
    pub fn read_i32_at(&self, file: &File, first: u64, out: &mut [i32]) -> Result<()> {
        self.expect(ElementType::I32)?;
        let end = first.checked_add(out.len() as u64).filter(|&end| end <= self.len);
        if end.is_none() {
            return Err(Error::InvalidArgument(format!(
                "values {first}..{} lie beyond the {} of {}",
                first as u128 + out.len() as u128,
                self.len,
                self.path.display()
            )));
        }
        read_exact_at(&self.path, file, self.data_offset + 4 * first, bytemuck::cast_slice_mut(out))?;
        for v in out.iter_mut() {
            *v = i32::from_le(*v);
        }
        Ok(())
    }

    /// Reads the bytes of `out.len() / size` values starting at value `first`, as stored: the
    /// little-endian values the kernels read on a little-endian host (every CUDA host).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, write_npy};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.npy");
    /// write_npy(&path, &[3], &[0x0102u16, 0x0304, 0x0506])?;
    /// let file = DataFile::open(&path, None)?;
    /// let mut bytes = [0u8; 4];
    /// file.read_bytes_at(&file.reopen()?, 1, &mut bytes)?; // values 1 and 2, as stored
    /// assert_eq!(bytes, [0x04, 0x03, 0x06, 0x05]);
    /// assert!(file.read_bytes_at(&file.reopen()?, 0, &mut [0u8; 3]).is_err()); // not whole values
    /// # Ok(()) }
    /// ```
    pub fn read_bytes_at(&self, file: &File, first: u64, out: &mut [u8]) -> Result<()> {
        let size = self.element.size();
        let count = out.len() as u64 / size;
        if !(out.len() as u64).is_multiple_of(size) || first.checked_add(count).is_none_or(|end| end > self.len) {
            return Err(Error::InvalidArgument(format!(
                "{} bytes from value {first}: not whole {} values inside the {} of {}",
                out.len(),
                self.element.name(),
                self.len,
                self.path.display()
            )));
        }
        read_exact_at(&self.path, file, self.data_offset + size * first, out)
    }

    /// Reads every value.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::io::{DataFile, ElementType};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("v.bin");
    /// std::fs::write(&path, [1i32, -2, 300_000].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    /// let file = DataFile::open(&path, Some(ElementType::I32))?;
    /// assert_eq!(file.read_all_i32()?, [1, -2, 300_000]);
    /// # Ok(()) }
    /// ```
    pub fn read_all_i32(&self) -> Result<Vec<i32>> {
        let len = usize::try_from(self.len)
            .map_err(|_| file_error(&self.path, format!("{} values do not fit in this machine's memory", self.len)))?;
        let mut values = vec![0i32; len];
        self.read_i32_at(&self.reopen()?, 0, &mut values)?;
        Ok(values)
    }

    fn expect(&self, element: ElementType) -> Result<()> {
        if self.element != element {
            return Err(file_error(
                &self.path,
                format!("holds {} values, read as {}", self.element.name(), element.name()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// Writes a `.npy` file by hand: the header text numpy writes, padded, then `data`.
    fn raw_npy(path: &Path, header: &str, data: &[u8]) {
        let mut text = header.to_string();
        while !(10 + text.len() + 1).is_multiple_of(64) {
            text.push(' ');
        }
        text.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((text.len() as u16).to_le_bytes());
        bytes.extend(text.as_bytes());
        bytes.extend(data);
        std::fs::write(path, bytes).unwrap();
    }

    fn error_of<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn matrix_round_trips_through_a_npy_file() {
        let d = dir();
        let path = d.path().join("m.npy");
        let m = Matrix::new(3, 2, vec![1.5, -2.0, 0.0, f32::MAX, f32::MIN_POSITIVE, 7.25]).unwrap();
        write_matrix(&path, &m).unwrap();
        assert_eq!(read_matrix(&path).unwrap(), m);
    }

    #[test]
    fn matrix_written_by_numpy_layout_is_read() {
        let d = dir();
        let path = d.path().join("np.npy");
        let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        raw_npy(&path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", &data);
        let m = read_matrix(&path).unwrap();
        assert_eq!((m.rows, m.cols, m.data), (2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    }

    #[test]
    fn missing_matrix_file_is_an_error_naming_it() {
        let d = dir();
        let path = d.path().join("absent.npy");
        let err = error_of(read_matrix(&path));
        assert!(err.contains("absent.npy") && err.contains("no such file"), "{err}");
    }

    #[test]
    fn float64_matrix_is_an_error_naming_the_dtype() {
        let d = dir();
        let path = d.path().join("f64.npy");
        raw_npy(&path, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }", &1f64.to_le_bytes());
        let err = error_of(read_matrix(&path));
        assert!(err.contains("f64.npy") && err.contains("float64 ('<f8')") && err.contains("float32"), "{err}");
    }

    #[test]
    fn big_endian_matrix_is_an_error_naming_the_byte_order() {
        let d = dir();
        let path = d.path().join("be.npy");
        raw_npy(&path, "{'descr': '>f4', 'fortran_order': False, 'shape': (1, 1), }", &1f32.to_be_bytes());
        assert!(error_of(read_matrix(&path)).contains("big-endian float32"));
    }

    #[test]
    fn one_and_three_dimensional_arrays_are_not_matrices() {
        let d = dir();
        let path = d.path().join("v.npy");
        write_npy(&path, &[4], &[1f32, 2.0, 3.0, 4.0]).unwrap();
        let err = error_of(read_matrix(&path));
        assert!(err.contains("v.npy") && err.contains("1 dimensions (shape [4]): a matrix has 2"), "{err}");
        write_npy(&path, &[1, 2, 2], &[1f32, 2.0, 3.0, 4.0]).unwrap();
        assert!(error_of(read_matrix(&path)).contains("3 dimensions"));
    }

    #[test]
    fn fortran_order_matrix_is_an_error() {
        let d = dir();
        let path = d.path().join("f.npy");
        raw_npy(&path, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }", &1f32.to_le_bytes());
        let err = error_of(read_matrix(&path));
        assert!(err.contains("f.npy") && err.contains("Fortran order") && err.contains("C order"), "{err}");
    }

    #[test]
    fn truncated_and_overlong_matrix_data_are_errors() {
        let d = dir();
        let path = d.path().join("t.npy");
        raw_npy(&path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", &[0u8; 12]);
        let err = error_of(read_matrix(&path));
        assert!(err.contains("t.npy") && err.contains("truncated") && err.contains("needs 16 bytes"), "{err}");
        raw_npy(&path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", &[0u8; 20]);
        assert!(error_of(read_matrix(&path)).contains("4 bytes follow"));
    }

    #[test]
    fn a_file_that_is_not_npy_is_an_error() {
        let d = dir();
        let path = d.path().join("text.npy");
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        assert!(error_of(read_matrix(&path)).contains("not a .npy file"));
        std::fs::write(&path, b"\x93NUMPY\x01\x00\xff").unwrap();
        assert!(error_of(read_matrix(&path)).contains("header is not valid"));
    }

    #[test]
    fn a_failed_output_leaves_no_file_behind() {
        let d = dir();
        let path = d.path().join("out.npy");
        let out = OutputFile::create(&path).unwrap();
        assert!(out.write_npy(&[2, 2], &[1f32]).is_err());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        let err = error_of(OutputFile::create(&d.path().join("no/such/dir/out.npy")));
        assert!(err.contains("out.npy") && err.contains("cannot create"), "{err}");
    }

    #[test]
    fn an_output_onto_a_directory_fails_before_any_work() {
        let d = dir();
        let err = error_of(OutputFile::create(d.path()));
        assert!(err.contains("is a directory"), "{err}");
        std::fs::create_dir(d.path().join("out.npy")).unwrap();
        let err = error_of(OutputFile::create(&d.path().join("out.npy")));
        assert!(err.contains("out.npy: is a directory"), "{err}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_output_replaces_an_existing_file_only_when_complete() {
        let d = dir();
        let path = d.path().join("c.npy");
        std::fs::write(&path, b"old").unwrap();
        let out = OutputFile::create(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        out.write_npy(&[1, 1], &[3f32]).unwrap();
        assert_eq!(read_matrix(&path).unwrap().data, vec![3.0]);
    }

    #[test]
    fn i32_npy_of_any_shape_round_trips_as_histogram_input() {
        let d = dir();
        let path = d.path().join("v.npy");
        let values: Vec<i32> = (-5..7).collect();
        write_npy(&path, &[3, 4], &values).unwrap();
        let f = DataFile::open(&path, None).unwrap();
        assert_eq!((f.element(), f.len(), f.bytes()), (ElementType::I32, 12, 48));
        assert_eq!(f.read_all_i32().unwrap(), values);
        let mut part = [0i32; 3];
        f.read_i32_at(&f.reopen().unwrap(), 4, &mut part).unwrap();
        assert_eq!(part, [-1, 0, 1]);
        assert!(f.read_i32_at(&f.reopen().unwrap(), 10, &mut part).is_err());
    }

    #[test]
    fn histogram_input_of_an_unsupported_dtype_names_it_and_the_supported_ones() {
        let d = dir();
        let path = d.path().join("f.npy");
        write_npy(&path, &[2], &[1f64, 2.0]).unwrap();
        let err = error_of(DataFile::open(&path, None));
        assert!(err.contains("f.npy") && err.contains("float64 ('<f8')") && err.contains("i32 ('<i4')"), "{err}");
        assert!(err.contains("u8 ('|u1')") && err.contains("f32 ('<f4')"), "{err}");
        write_npy(&path, &[2], &[1i64, 2]).unwrap();
        assert!(error_of(DataFile::open(&path, None)).contains("int64 ('<i8')"));
    }

    #[test]
    fn raw_histogram_input_is_read_little_endian_and_must_be_whole_values() {
        let d = dir();
        let path = d.path().join("v.bin");
        let values = [1i32, -2, 300_000];
        std::fs::write(&path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let f = DataFile::open(&path, Some(ElementType::I32)).unwrap();
        assert_eq!(f.read_all_i32().unwrap(), values);
        std::fs::write(&path, [0u8; 10]).unwrap();
        let err = error_of(DataFile::open(&path, Some(ElementType::I32)));
        assert!(err.contains("v.bin") && err.contains("truncated") && err.contains("10 bytes"), "{err}");
    }

    #[test]
    fn raw_file_without_type_is_an_error_that_suggests_the_type() {
        let d = dir();
        let path = d.path().join("v.bin");
        std::fs::write(&path, [0u8; 8]).unwrap();
        let err = error_of(DataFile::open(&path, None));
        assert!(err.contains("not a .npy file") && err.contains("--type"), "{err}");
        let err = error_of(DataFile::open(&d.path().join("none.bin"), Some(ElementType::I32)));
        assert!(err.contains("none.bin: no such file"), "{err}");
    }

    #[test]
    fn truncated_histogram_npy_is_an_error() {
        let d = dir();
        let path = d.path().join("t.npy");
        raw_npy(&path, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }", &[0u8; 16]);
        let err = error_of(DataFile::open(&path, None));
        assert!(err.contains("t.npy") && err.contains("truncated"), "{err}");
    }

    #[test]
    fn empty_histogram_input_has_no_values() {
        let d = dir();
        let path = d.path().join("e.npy");
        write_npy::<i32>(&path, &[0], &[]).unwrap();
        let f = DataFile::open(&path, None).unwrap();
        assert!(f.is_empty());
        assert_eq!(f.read_all_i32().unwrap(), Vec::<i32>::new());
    }

    #[test]
    fn a_npy_file_opened_as_raw_is_refused_rather_than_its_header_counted() {
        let d = dir();
        let path = d.path().join("v.npy");
        write_npy(&path, &[4], &[1i32, 2, 3, 4]).unwrap();
        let err = error_of(DataFile::open(&path, Some(ElementType::I32)));
        assert!(err.contains("v.npy") && err.contains("int32 ('<i4')") && err.contains("without --type"), "{err}");
        // Raw bytes that merely start like a .npy file, without a valid header, stay raw.
        let path = d.path().join("v.bin");
        std::fs::write(&path, b"\x93NUMPY\x01\x00\xff\xff").unwrap();
        assert_eq!(DataFile::open(&path, Some(ElementType::U8)).unwrap().len(), 10);
    }

    #[test]
    fn reads_beyond_the_end_are_errors_even_where_the_end_would_overflow() {
        let d = dir();
        let path = d.path().join("v.bin");
        std::fs::write(&path, [0u8; 8]).unwrap();
        let f = DataFile::open(&path, Some(ElementType::I32)).unwrap();
        let handle = f.reopen().unwrap();
        let err = error_of(f.read_i32_at(&handle, u64::MAX, &mut [0i32; 2]));
        assert!(err.contains("lie beyond the 2"), "{err}");
        let err = error_of(f.read_bytes_at(&handle, u64::MAX, &mut [0u8; 8]));
        assert!(err.contains("not whole i32 values inside the 2"), "{err}");
    }

    #[test]
    fn a_shape_whose_size_overflows_is_an_error_not_a_panic() {
        let d = dir();
        let path = d.path().join("o.npy");
        let err = error_of(write_npy::<f32>(&path, &[1 << 32, 1 << 32, 0, 1 << 40], &[]));
        assert!(err.contains("more than 2^64"), "{err}");
        let err = error_of(write_npy::<f32>(&path, &[1 << 63, 2], &[]));
        assert!(err.contains("more than 2^64"), "{err}");
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }

    #[test]
    fn outputs_get_the_permissions_of_a_newly_created_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir();
        let (out, plain) = (d.path().join("out.npy"), d.path().join("plain"));
        write_npy(&out, &[1], &[1f32]).unwrap();
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out), mode(&plain));
    }
}
