package dirindex

import (
	"path/filepath"
	"testing"
)

// kept says whether dir can be kept: on a local file system.
func kept(dir string) bool { return localFileSystem(dir) }

func isKept(dir string) bool {
	index.Lock()
	defer index.Unlock()
	return index.byDir[filepath.Clean(dir)] != nil
}

// TestNetworkFileSystemsAreNotKept: only file systems whose changes all
// pass through this kernel are kept.
func TestNetworkFileSystemsAreNotKept(t *testing.T) {
	for _, magic := range []int64{0x6969 /* NFS */, 0xff534d42 /* CIFS */, 0x65735546 /* FUSE */} {
		if localFileSystems[magic] {
			t.Errorf("file system %#x is treated as local", magic)
		}
	}
}
