// Package atomicfile writes the output files of the offline commands
// (fairway trace synth, simulate, tune, report) so that a write that fails
// part-way, for a full disk, a file size limit, an I/O error or a crash,
// leaves the file that was there before as it was, instead of truncating
// it first and leaving half of the new one.
//
// The new contents go to a temporary file beside the target (in the same
// directory, so on the same file system), named "."+base+".<random>";
// Commit syncs it and renames it over the target, which readers then see
// whole, old or new. On any error, or when the caller abandons the file,
// the temporary file is removed and the target is not touched. (The
// directory is not synced: after a crash the target may still be the old
// version, but never a part of the new one. A crash between Create and
// Commit can leave the hidden temporary file behind.)
//
// A target that exists and is not a regular file (/dev/null, /dev/stdout,
// a named pipe) is written in place: there is nothing there to keep, and
// renaming over it would replace the device. A target that is a symbolic
// link to a regular file is replaced where the link points, so the link
// stays. A directory as the target is refused: "is a directory".
//
// Errors name the target once ("write out.json: file too large"), never
// the temporary file.
package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// File is an output file being written. Write to it, then Commit; defer
// Abandon, which removes the temporary file unless Commit renamed it.
type File struct {
	path      string      // the target, as the caller named it (for errors)
	real      string      // the target, symbolic links resolved
	mode      fs.FileMode // permissions to set on Commit; 0: leave as created
	f         *os.File    // the temporary file, or the target in place; nil once done
	tmp       string      // the temporary file's name; "" when writing in place
	err       error       // the first write error, returned by every later call
	committed bool
}

// Create starts a new version of path. New files get perm less the umask,
// as os.Create and os.WriteFile give them; an existing file keeps its
// permission bits, and one the caller may not write is refused, as
// os.WriteFile refuses it.
func Create(path string, perm fs.FileMode) (*File, error) {
	a := &File{path: path, real: path}
	st, err := os.Stat(path) // follows links
	switch {
	case err == nil && st.IsDir():
		// Refused before a temporary file is made: the rename would fail
		// with "file exists", which does not say what is wrong.
		return nil, a.wrap(syscall.EISDIR)
	case err == nil && !st.Mode().IsRegular():
		// A device or a pipe: write straight to it.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, a.wrap(unwrapPath(err))
		}
		a.f = f
		return a, nil
	case err == nil && st.Mode().IsRegular():
		if real, err := filepath.EvalSymlinks(path); err == nil {
			a.real = real
		}
		if err := syscall.Access(a.real, 2 /* W_OK */); err != nil {
			return nil, a.wrap(err)
		}
		a.mode = st.Mode().Perm()
	}
	dir, base := filepath.Split(a.real)
	if dir == "" {
		dir = "."
	}
	// Not os.CreateTemp, whose files are 0600 whatever the umask: opening
	// with perm lets the kernel apply the umask to a new file the way
	// os.WriteFile did.
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(uint64(rand.Uint32()), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm.Perm())
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, a.wrap(unwrapPath(err))
		}
		a.f, a.tmp = f, name
		return a, nil
	}
}

// Write writes p to the new version. After an error every later Write and
// Commit return it, and the error does not name the temporary file: wrap
// it with the target's name (Commit and the package's Write do).
func (a *File) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if a.f == nil {
		return 0, fs.ErrClosed
	}
	n, err := a.f.Write(p)
	if err != nil {
		a.err = unwrapPath(err)
	}
	return n, a.err
}

// Commit puts the new version in place of the target: it syncs the
// temporary file, sets its permissions, closes it and renames it over the
// target. On any error (a failed Write before it included) the temporary
// file is removed, the target is as it was, and the error names the
// target.
func (a *File) Commit() error {
	if a.f == nil {
		if a.committed {
			return nil
		}
		return a.wrap(fs.ErrClosed)
	}
	if a.err != nil {
		a.Abandon()
		return a.wrap(a.err)
	}
	f := a.f
	a.f = nil
	if a.tmp == "" { // in place
		a.committed = true
		return a.wrap(unwrapPath(f.Close()))
	}
	err := f.Sync()
	if err == nil && a.mode != 0 {
		err = f.Chmod(a.mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.tmp, a.real)
	}
	if err != nil {
		os.Remove(a.tmp)
		return a.wrap(unwrapPath(err))
	}
	a.committed = true
	return nil
}

// Abandon drops the new version: the temporary file is closed and removed
// and the target stays as it was. It does nothing after Commit, so it can
// be deferred right after Create.
func (a *File) Abandon() {
	if a.f == nil {
		return
	}
	a.f.Close()
	if a.tmp != "" {
		os.Remove(a.tmp)
	}
	a.f = nil
}

// Write writes path with write, which gets the new version to write to,
// and commits it if write returns nil; otherwise the old file stays and
// the error, write's own or the file's, names path once.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) error {
	a, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer a.Abandon()
	if err := write(a); err != nil {
		return a.wrap(err)
	}
	return a.Commit()
}

// WriteFile is os.WriteFile, atomically.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// wrap is err naming the target: "write PATH: ERR". nil stays nil.
func (a *File) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: "write", Path: a.path, Err: err}
}

// unwrapPath strips the *fs.PathError or *os.LinkError that names a file
// (the temporary one, as like as not) from err, so that wrap names the
// target alone; other errors are returned as they are.
func unwrapPath(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	}
	return err
}

// Check says whether Create could start a new version of path, leaving
// everything as it was: a command that writes its file only after long
// work calls it first, so that a missing or read-only directory is said
// before the work, not after it. A device or a pipe is not opened (a
// named pipe's reader would see the check as an empty write).
func Check(path string) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return nil
	}
	a, err := Create(path, 0o600)
	if err != nil {
		return err
	}
	a.Abandon()
	return nil
}
