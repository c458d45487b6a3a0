package sqlite

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/filelock"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// refused checks that Open fails with an error of the given kind whose
// message names the file and says what to do, and that the file is
// untouched: a database Open cannot use is never reset.
func refused(t *testing.T, dir string, kind error, wantInMsg ...string) error {
	t.Helper()
	path := filepath.Join(dir, FileName)
	var before string
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o400 != 0 {
		before = fileDigest(t, path)
	}
	s, err := Open(context.Background(), dir, quiet())
	if err == nil {
		s.Close()
		t.Fatalf("Open succeeded, want %v", kind)
	}
	t.Logf("Open: %v", err)
	if !errors.Is(err, kind) {
		t.Fatalf("Open: %v, want %v", err, kind)
	}
	var oe *OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("Open: %T is not an *OpenError", err)
	}
	for _, want := range wantInMsg {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	if before != "" && fileDigest(t, path) != before {
		t.Fatal("Open changed the file it refused")
	}
	// Refusing released the data dir: the lock is free.
	if held, err := lockHeld(dir); err != nil || held {
		t.Fatalf("the data dir is still locked after a refused Open (%v)", err)
	}
	return err
}

func lockHeld(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	return filelock.TryLock(f)
}

// realDB makes a database with enough history to span many pages.
func realDB(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	s := openStore(t, dir, Options{})
	mustWrite(t, s, history.Batch{Conversations: []history.Conversation{{ID: "a", Title: "t"}}})
	for i := int64(0); i < 20; i++ {
		mustWrite(t, s, history.Batch{Events: testEvents("a", i*200+1, i*200+200)})
	}
	mustClose(t, s)
	return dir, filepath.Join(dir, FileName)
}

func TestRandomBytesRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	junk := make([]byte, 64<<10)
	rand.Read(junk)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, ErrNotHistory, path, "not a SQLite database", "move", "mv "+path)
}

func TestEmptyFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, ErrNotHistory, path, "empty", "move")
}

func TestTextFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("SQLite format 3"), 0o600); err != nil { // shorter than a header
		t.Fatal(err)
	}
	refused(t, dir, ErrNotHistory, path, "cut short", "move")
}

func TestTruncatedDatabaseRefused(t *testing.T) {
	for _, keep := range []int64{100, 4096, 3 * 4096, -1} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			dir, path := realDB(t)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			size := keep
			if keep < 0 {
				size = fi.Size() / 2
			}
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			refused(t, dir, ErrCorrupt, path, "move")
		})
	}
}

func TestDamagedPagesRefused(t *testing.T) {
	dir, path := realDB(t)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 2*4096)
	rand.Read(junk)
	if _, err := f.WriteAt(junk, 5*4096); err != nil { // two B-tree pages in the middle
		t.Fatal(err)
	}
	f.Close()
	refused(t, dir, ErrCorrupt, path, "move")
}

func TestDirectoryInPlaceOfFileRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, ErrNotHistory, "it is a directory")
}

func TestLeftoverWALRefused(t *testing.T) {
	dir, path := realDB(t)
	// Someone moves the database away but leaves its log behind.
	s := openStore(t, dir, Options{})
	mustWrite(t, s, history.Batch{Events: testEvents("a", 4001, 4010)})
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	os.Remove(path)
	if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, ErrCorrupt, path+"-wal", "left over")
}

func TestDataDirIsAFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, quiet()); !errors.Is(err, ErrAccess) {
		t.Fatalf("Open on a file: %v", err)
	}
}

// Permission checks mean nothing to root, so as root the test runs its
// cases in a copy of itself started as the user nobody.
const permChildEnv = "PILOTDESK_HISTORY_PERM_CHILD"

func TestPermissions(t *testing.T) {
	if dir := os.Getenv(permChildEnv); dir != "" {
		permissionCases(t, dir)
		return
	}
	root := t.TempDir()
	if os.Geteuid() != 0 {
		permissionCases(t, root)
		return
	}
	const nobody = 65534
	// nobody needs to reach root and run a copy of the test binary.
	for p := root; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "sqlite.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPermissions$", "-test.v")
	cmd.Env = append(os.Environ(), permChildEnv+"="+work, "HOME="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("the cases failed as nobody: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestPermissions") {
		t.Fatal("the child did not run the cases")
	}
}

func permissionCases(t *testing.T, root string) {
	t.Run("UnreadableFile", func(t *testing.T) {
		dir := filepath.Join(root, "unreadable")
		mustClose(t, openStore(t, dir, Options{}))
		path := filepath.Join(dir, FileName)
		if err := os.Chmod(path, 0o200); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, ErrAccess, path, "chmod 600 "+path)
	})
	t.Run("ReadOnlyFile", func(t *testing.T) {
		dir := filepath.Join(root, "readonly")
		mustClose(t, openStore(t, dir, Options{}))
		path := filepath.Join(dir, FileName)
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, ErrAccess, path, "chmod 600")
	})
	t.Run("ReadOnlyDir", func(t *testing.T) {
		dir := filepath.Join(root, "readonly-dir")
		mustClose(t, openStore(t, dir, Options{}))
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		refused(t, dir, ErrAccess, dir, "chmod 700 "+dir)
	})
	t.Run("UncreatableDir", func(t *testing.T) {
		parent := filepath.Join(root, "locked-parent")
		if err := os.Mkdir(parent, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(parent, 0o700)
		dir := filepath.Join(parent, "data")
		if _, err := Open(context.Background(), dir, quiet()); !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Open in an unwritable parent: %v", err)
		}
	})
}
