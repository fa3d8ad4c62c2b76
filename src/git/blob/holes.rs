//! Writing a file out with holes where its content has whole blocks of
//! zeros, as `cp --sparse=auto` does (see `blob`).
//!
//! Owns: the `Sparse` writer and its block size.
//! Never: writes anywhere but the file it is given.

/// The block size holes are made of: a whole block of zeros at a block
/// boundary is skipped (a hole), anything else written.
const HOLE_BLOCK: usize = 4096;

/// A writer into a new, empty file that leaves holes where whole
/// [`HOLE_BLOCK`]s of zeros are written (on filesystems that keep holes;
/// elsewhere the kernel fills them). Call [`Sparse::finish`] after the last
/// write: it sets the length, so a file that ends in zeros has them.
pub struct Sparse<'f> {
    file: &'f std::fs::File,
    pos: u64,
}

impl<'f> Sparse<'f> {
    pub fn new(file: &'f std::fs::File) -> Sparse<'f> {
        Sparse { file, pos: 0 }
    }

    /// Give the file its whole length (a trailing hole has no bytes yet).
    pub fn finish(self) -> std::io::Result<()> {
        if self.file.metadata()?.len() < self.pos {
            self.file.set_len(self.pos)?;
        }
        Ok(())
    }

    /// Write `bytes` at the current position (one `pwrite` per run).
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(bytes, self.pos)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }
}

impl std::io::Write for Sparse<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut i = 0;
        // The bytes from `run` on are not zero blocks: written together.
        let mut run = 0;
        while i < buf.len() {
            let at = (self.pos as usize + (i - run)) % HOLE_BLOCK;
            let take = (HOLE_BLOCK - at).min(buf.len() - i);
            let block = &buf[i..i + take];
            if at == 0 && take == HOLE_BLOCK && block.iter().all(|&b| b == 0) {
                self.put(&buf[run..i])?;
                self.pos += HOLE_BLOCK as u64;
                run = i + take;
            }
            i += take;
        }
        self.put(&buf[run..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
