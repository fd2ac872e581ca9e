package dirindex

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxDirs bounds the directories kept (and inotify watches held).
const maxDirs = 1024

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// dirState is one kept directory: its watch, identity and sorted entries.
type dirState struct {
	dir      string
	wd       int32
	dev, ino uint64
	entries  []Entry
}

var index = struct {
	sync.Mutex
	fd    int // 0 before first use, -1 when inotify is unavailable
	byWd  map[int32]*dirState
	byDir map[string]*dirState
	buf   []byte
}{byWd: map[int32]*dirState{}, byDir: map[string]*dirState{}}

// cached answers from a kept directory after applying every pending
// change notification.
func cached(dir, prefix string) ([]Entry, bool) {
	index.Lock()
	defer index.Unlock()
	if index.fd <= 0 {
		return nil, false
	}
	drain()
	st := index.byDir[dir]
	if st == nil {
		return nil, false
	}
	// The path may now name another directory (a parent renamed, a
	// directory replaced): the watch follows the old one.
	if dev, ino, ok := identity(dir); !ok || dev != st.dev || ino != st.ino {
		forget(st, true)
		return nil, false
	}
	return withPrefix(st.entries, prefix), true
}

// keep watches a directory found large, then reads it again (small
// directories never cost a watch): changes made after the watch started
// are in the queue and applied on top of that reading before any answer
// (applying a create or delete is idempotent, so one already in the
// reading does no harm).
func keep(dir string) {
	index.Lock()
	defer index.Unlock()
	if !ensureFD() || len(index.byDir) >= maxDirs || index.byDir[dir] != nil {
		return
	}
	dev, ino, ok := identity(dir)
	if !ok || !localFileSystem(dir) {
		return
	}
	wd, err := unix.InotifyAddWatch(index.fd, dir, watchMask)
	if err != nil {
		return // watch limit reached, or the directory went away
	}
	if index.byWd[int32(wd)] != nil {
		return // the same directory under another path: keep one
	}
	des, err := os.ReadDir(dir)
	dev2, ino2, ok2 := identity(dir)
	if err != nil || !ok2 || dev2 != dev || ino2 != ino {
		_, _ = unix.InotifyRmWatch(index.fd, uint32(wd))
		return
	}
	st := &dirState{dir: dir, wd: int32(wd), dev: dev, ino: ino, entries: make([]Entry, 0, len(des))}
	for _, de := range des {
		st.entries = append(st.entries, Entry{Name: de.Name(), Type: de.Type()})
	}
	index.byDir[dir], index.byWd[st.wd] = st, st
}

func ensureFD() bool {
	if index.fd == 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			index.fd = -1
			return false
		}
		index.fd, index.buf = fd, make([]byte, 64<<10)
	}
	return index.fd > 0
}

// drain applies every queued notification to the kept directories.
func drain() {
	for {
		n, err := unix.Read(index.fd, index.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				forgetAll() // cannot tell what changed
			}
			return
		}
		apply(index.buf[:n])
	}
}

func apply(buf []byte) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		start := off + unix.SizeofInotifyEvent
		name := strings.TrimRight(string(buf[start:min(start+nameLen, len(buf))]), "\x00")
		off = start + nameLen
		if mask&unix.IN_Q_OVERFLOW != 0 {
			forgetAll()
			continue
		}
		st := index.byWd[wd]
		if st == nil {
			continue
		}
		switch {
		case mask&unix.IN_IGNORED != 0:
			forget(st, false) // the kernel dropped the watch
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0:
			forget(st, true)
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			if mask&unix.IN_ISDIR != 0 {
				st.put(Entry{Name: name, Type: os.ModeDir})
			} else if t, ok := typeOf(st.dir, name); ok {
				st.put(Entry{Name: name, Type: t})
			}
		case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			st.remove(name)
		}
	}
}

func (st *dirState) put(e Entry) {
	i, found := slices.BinarySearchFunc(st.entries, e.Name, byName)
	if found {
		st.entries[i] = e
		return
	}
	st.entries = slices.Insert(st.entries, i, e)
}

func (st *dirState) remove(name string) {
	if i, found := slices.BinarySearchFunc(st.entries, name, byName); found {
		st.entries = slices.Delete(st.entries, i, i+1)
	}
}

func byName(e Entry, name string) int { return strings.Compare(e.Name, name) }

func forget(st *dirState, rmWatch bool) {
	if rmWatch {
		_, _ = unix.InotifyRmWatch(index.fd, uint32(st.wd))
	}
	delete(index.byWd, st.wd)
	if index.byDir[st.dir] == st {
		delete(index.byDir, st.dir)
	}
}

func forgetAll() {
	for _, st := range index.byWd {
		forget(st, true)
	}
}

// localFileSystems are the file systems whose every change passes through
// this kernel, so inotify sees it. On NFS, SMB or FUSE another host or
// process can change a directory unseen: those are read every time.
var localFileSystems = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:      true, // ext2, ext3 and ext4 share it
	unix.XFS_SUPER_MAGIC:       true,
	unix.BTRFS_SUPER_MAGIC:     true,
	unix.TMPFS_MAGIC:           true,
	unix.OVERLAYFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:      true,
	0x2fc12fc1:                 true, // ZFS
}

func localFileSystem(dir string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return false
	}
	return localFileSystems[int64(fs.Type)]
}

func identity(dir string) (dev, ino uint64, ok bool) {
	var s unix.Stat_t
	if err := unix.Stat(dir, &s); err != nil {
		return 0, 0, false
	}
	return uint64(s.Dev), s.Ino, true
}
