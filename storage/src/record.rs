//! The shared encoding of variable-length records.

use crate::StorageError;

const RECORD_VERSION: u8 = 1;

/// Builds a record: a version byte, then big-endian, length-prefixed fields.
pub(crate) struct Writer(pub(crate) Vec<u8>);

/// Room a record starts with: every record the exchange writes per order
/// fits, so building one is one allocation instead of a regrowth per
/// doubling (five for a 120-byte order row).
const RECORD_CAPACITY: usize = 128;

impl Writer {
    pub(crate) fn new() -> Self {
        let mut record = Vec::with_capacity(RECORD_CAPACITY);
        record.push(RECORD_VERSION);
        Self(record)
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(&(v.len() as u32).to_be_bytes());
        self.0.extend_from_slice(v);
    }
    /// An optional address: empty when absent.
    pub(crate) fn opt_address(&mut self, v: Option<&alloy_primitives::Address>) {
        self.bytes(v.map_or(&[][..], |a| a.as_slice()));
    }
    pub(crate) fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
            None => self.u8(0),
        }
    }
}

/// Reads a record written by [`Writer`].
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
    what: &'static str,
    len: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Result<Self, StorageError> {
        let mut reader = Self {
            rest: bytes,
            what,
            len: bytes.len(),
        };
        if reader.u8()? != RECORD_VERSION {
            return Err(reader.corrupt());
        }
        Ok(reader)
    }
    pub(crate) fn corrupt(&self) -> StorageError {
        StorageError::Corrupt {
            what: self.what,
            len: self.len,
        }
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        if self.rest.len() < n {
            return Err(self.corrupt());
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, StorageError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("took 8 bytes"),
        ))
    }
    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, StorageError> {
        let len = u32::from_be_bytes(self.take(4)?.try_into().expect("took 4 bytes")) as usize;
        Ok(self.take(len)?.to_vec())
    }
    pub(crate) fn string(&mut self) -> Result<String, StorageError> {
        String::from_utf8(self.bytes()?).map_err(|_| self.corrupt())
    }
    pub(crate) fn address(&mut self) -> Result<alloy_primitives::Address, StorageError> {
        alloy_primitives::Address::try_from(self.bytes()?.as_slice()).map_err(|_| self.corrupt())
    }
    /// An address written by [`Writer::opt_address`].
    pub(crate) fn opt_address(
        &mut self,
    ) -> Result<Option<alloy_primitives::Address>, StorageError> {
        let bytes = self.bytes()?;
        match bytes.len() {
            0 => Ok(None),
            20 => Ok(Some(alloy_primitives::Address::from_slice(&bytes))),
            _ => Err(self.corrupt()),
        }
    }
    pub(crate) fn opt_u64(&mut self) -> Result<Option<u64>, StorageError> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(self.u64()?),
        })
    }
    /// Whether every field has been read (older records end before the
    /// fields newer ones append).
    pub(crate) fn at_end(&self) -> bool {
        self.rest.is_empty()
    }
    pub(crate) fn finish(self) -> Result<(), StorageError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt())
        }
    }
}
