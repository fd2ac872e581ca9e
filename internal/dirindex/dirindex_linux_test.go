package dirindex

import "path/filepath"

func kept() bool { return true }

func isKept(dir string) bool {
	index.Lock()
	defer index.Unlock()
	return index.byDir[filepath.Clean(dir)] != nil
}
