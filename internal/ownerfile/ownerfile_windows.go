//go:build windows

package ownerfile

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// restrict replaces path's access list with one that is protected from its
// parent's (P) and allows full control to the user running pilotdesk and
// to SYSTEM (which backup and indexing run as) only; a folder passes the
// same entries on to what is created in it (OICI).
func restrict(path string, dir bool) error {
	token := windows.GetCurrentProcessToken()
	user, err := token.GetTokenUser()
	if err != nil {
		return fmt.Errorf("reading the current user: %w", err)
	}
	inherit := ""
	if dir {
		inherit = "OICI"
	}
	sddl := fmt.Sprintf("D:P(A;%[1]s;FA;;;%[2]s)(A;%[1]s;FA;;;SY)", inherit, user.User.Sid.String())
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("building the access list: %w", err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("reading the access list: %w", err)
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		nil, nil, dacl, nil)
}
