package prolog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CheckRootPath says whether root may trust path: run it, read it or keep
// state under it. Every existing component, from / down to path itself,
// must belong to root and be writable by no one else, or another user could
// replace what root runs or plant files it reads (a state directory
// holding jobs/<victim>.mps becomes LD_PRELOAD in the victim's tasks). A
// sticky world-writable directory such as /tmp is accepted only above an
// existing root-owned component: there nobody else can rename or remove
// it. A path that does not exist yet is fine when its deepest existing
// ancestor is writable by root alone (root creates the rest). The path
// must be absolute.
func CheckRootPath(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: want an absolute path", path)
	}
	path = filepath.Clean(path)
	parts := strings.Split(path, string(filepath.Separator))
	cur := string(filepath.Separator)
	for i := 0; i < len(parts); i++ {
		if i > 0 {
			if parts[i] == "" {
				continue
			}
			cur = filepath.Join(cur, parts[i])
		}
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the parent was checked as the deepest existing one
		}
		if err != nil {
			return fmt.Errorf("%s: %w", cur, err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			// The link's own owner counts too: in a sticky directory its
			// owner can point it elsewhere once the target passed.
			if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
				return fmt.Errorf("%s (a link) belongs to uid %d, want root", cur, sys.Uid)
			}
			target, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return fmt.Errorf("%s: %w", cur, err)
			}
			if err := CheckRootPath(target); err != nil {
				return fmt.Errorf("%s (a link to %s): %w", cur, target, err)
			}
			st, err = os.Stat(cur)
			if err != nil {
				return fmt.Errorf("%s: %w", cur, err)
			}
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			return fmt.Errorf("%s belongs to uid %d, want root", cur, sys.Uid)
		}
		if st.Mode().Perm()&0o022 == 0 {
			continue
		}
		sticky := st.IsDir() && st.Mode()&fs.ModeSticky != 0
		if sticky && i+1 < len(parts) && exists(filepath.Join(cur, parts[i+1])) {
			continue
		}
		return fmt.Errorf("%s has mode %04o: group or others can write it", cur, st.Mode().Perm())
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
