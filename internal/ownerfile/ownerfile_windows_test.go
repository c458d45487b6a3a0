//go:build windows

package ownerfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestRestrictAllowsOnlyTheUser checks the access lists Windows reports for
// a restricted data dir, a file made in it, and a file restricted by name:
// the current user and SYSTEM, nobody else, and not inherited from the
// parent (whose list usually lets Administrators and others in).
func TestRestrictAllowsOnlyTheUser(t *testing.T) {
	if underWine() {
		// Wine accepts the list but keeps only a POSIX mode on a Linux
		// filesystem, and reports Everyone back: only Windows can check it.
		t.Skip("Wine does not keep files' access lists; this test needs Windows")
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{user.User.Sid.String(), "S-1-5-18"}
	slices.Sort(want)

	dir := filepath.Join(t.TempDir(), "data dir ü")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(dir, "relay.json")
	if err := os.WriteFile(inside, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(named, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Restrict(named); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, inside, named} {
		got, protected, err := allowed(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s allows %v, want %v", path, got, want)
		}
		if path != inside && !protected {
			t.Errorf("%s inherits its parent's access list", path)
		}
	}
}

// underWine reports whether this runs under Wine, whose ntdll alone has
// wine_get_version.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// allowed lists the SIDs path's access list allows, and whether the list is
// protected from inheritance.
func allowed(path string) (sids []string, protected bool, err error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, false, err
	}
	control, _, err := sd.Control()
	if err != nil {
		return nil, false, err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, false, err
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return nil, false, err
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		sids = append(sids, sid.String())
	}
	return sids, control&windows.SE_DACL_PROTECTED != 0, nil
}
