; The pilotdesk installer for Windows, built on Linux by makensis
; (scripts/package-windows.sh, `make package-windows`).
;
; - Installs for the current user, without administrator rights, into
;   %LOCALAPPDATA%\Programs\pilotdesk (as VS Code's and many current user
;   installers do).
; - A Start-menu entry; a desktop shortcut when its component is chosen
;   (/DESKTOP on the command line chooses it in a silent install).
; - Registered in Settings > Apps ("Apps & features") for the user, with
;   its uninstaller.
; - Installing over an earlier version replaces the program in place; the
;   user's data (%LOCALAPPDATA%\pilotdesk: history, devices, relay.json) and
;   settings (%APPDATA%\pilotdesk) are never touched, by an
;   upgrade or by the uninstaller.
;
; Defines given by the build: VERSION (MAJOR.MINOR.PATCH), VERSION4
; (MAJOR.MINOR.PATCH.BUILD), SRCDIR (the folder with pilotdesk.exe,
; pilotdesk.com and pilotdesk.ico), OUTFILE; SIGN, when set, is a command
; that signs the file named by %1 (the uninstaller is signed with it too).

; A 64-bit installer for a 64-bit program: it runs where pilotdesk runs,
; including on Windows without 32-bit support (and on Wine's 64-bit prefix).
Target amd64-unicode
ManifestDPIAware true
SetCompressor /SOLID lzma
RequestExecutionLevel user

!define APP "pilotdesk"
!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP}"
!define APPKEY "Software\${APP}"

Name "${APP}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${APP}"
; An upgrade goes where the earlier version is.
InstallDirRegKey HKCU "${APPKEY}" "InstallDir"
BrandingText "${APP} ${VERSION}"

VIProductVersion "${VERSION4}"
VIFileVersion "${VERSION4}"
VIAddVersionKey "ProductName" "${APP}"
VIAddVersionKey "FileDescription" "${APP} installer"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "CompanyName" "${APP}"
VIAddVersionKey "LegalCopyright" "${APP} contributors"

!ifdef SIGN
!uninstfinalize '${SIGN} "%1"' = 0
!finalize '${SIGN} "%1"' = 0
!endif

!include "MUI2.nsh"
!include "FileFunc.nsh"
!include "WordFunc.nsh"
!insertmacro un.WordReplace

!define MUI_ICON "${SRCDIR}\pilotdesk.ico"
!define MUI_UNICON "${SRCDIR}\pilotdesk.ico"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\pilotdesk.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${APP}"

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

Section "${APP}" SecApp
	SectionIn RO
	SetOutPath "$INSTDIR"
	; A running copy holds its .exe open: say so rather than fail half-way.
	ClearErrors
	retry:
	File "${SRCDIR}\pilotdesk.exe"
	IfErrors 0 copied
		ClearErrors
		MessageBox MB_RETRYCANCEL|MB_ICONEXCLAMATION "${APP} is running. Quit it, then choose Retry." /SD IDCANCEL IDRETRY retry
		Abort "${APP} is running; nothing was changed."
	copied:
	File "${SRCDIR}\pilotdesk.com"
	File "${SRCDIR}\pilotdesk.ico"
	WriteUninstaller "$INSTDIR\uninstall.exe"

	CreateShortcut "$SMPROGRAMS\${APP}.lnk" "$INSTDIR\pilotdesk.exe" "" "$INSTDIR\pilotdesk.ico" 0 SW_SHOWNORMAL "" "${APP}: a desktop for AI coding agents"

	WriteRegStr HKCU "${APPKEY}" "InstallDir" "$INSTDIR"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayName" "${APP}"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
	WriteRegStr HKCU "${UNINSTKEY}" "Publisher" "${APP}"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\pilotdesk.ico"
	WriteRegStr HKCU "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
	WriteRegStr HKCU "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
	WriteRegStr HKCU "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
	WriteRegDWORD HKCU "${UNINSTKEY}" "NoModify" 1
	WriteRegDWORD HKCU "${UNINSTKEY}" "NoRepair" 1
	${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
	IntFmt $0 "0x%08X" $0
	WriteRegDWORD HKCU "${UNINSTKEY}" "EstimatedSize" "$0"
SectionEnd

Section "Add to PATH" SecPath
	; `pilotdesk serve` and `pilotdesk chat` in a terminal: the console
	; program pilotdesk.com comes before pilotdesk.exe in PATHEXT's order.
	ReadRegStr $0 HKCU "Environment" "Path"
	; WordReplace with E sets the error flag when $INSTDIR is not in it.
	ClearErrors
	${WordReplace} "$0" "$INSTDIR" "" "E+" $1
	IfErrors 0 done ; already there
	StrCpy $2 "$0;$INSTDIR"
	StrCmp "$0" "" 0 write
		StrCpy $2 "$INSTDIR"
	write:
	WriteRegExpandStr HKCU "Environment" "Path" "$2"
	WriteRegDWORD HKCU "${APPKEY}" "OnPath" 1
	SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=500
	done:
SectionEnd

Section /o "Desktop shortcut" SecDesktop
	CreateShortcut "$DESKTOP\${APP}.lnk" "$INSTDIR\pilotdesk.exe" "" "$INSTDIR\pilotdesk.ico" 0
SectionEnd

LangString DESC_SecApp ${LANG_ENGLISH} "The app, its command line (pilotdesk serve, pilotdesk chat) and a Start-menu entry."
LangString DESC_SecPath ${LANG_ENGLISH} "Lets a terminal run pilotdesk serve and pilotdesk chat by name."
LangString DESC_SecDesktop ${LANG_ENGLISH} "A shortcut on the desktop."
!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
	!insertmacro MUI_DESCRIPTION_TEXT ${SecApp} $(DESC_SecApp)
	!insertmacro MUI_DESCRIPTION_TEXT ${SecPath} $(DESC_SecPath)
	!insertmacro MUI_DESCRIPTION_TEXT ${SecDesktop} $(DESC_SecDesktop)
!insertmacro MUI_FUNCTION_DESCRIPTION_END

Function .onInit
	; /DESKTOP: the desktop shortcut in a silent install too.
	${GetParameters} $R0
	ClearErrors
	${GetOptions} $R0 "/DESKTOP" $R1
	IfErrors +2 0
		SectionSetFlags ${SecDesktop} ${SF_SELECTED}
FunctionEnd

Section "Uninstall"
	Delete "$INSTDIR\pilotdesk.exe"
	Delete "$INSTDIR\pilotdesk.com"
	Delete "$INSTDIR\pilotdesk.ico"
	Delete "$INSTDIR\uninstall.exe"
	RMDir "$INSTDIR"
	Delete "$SMPROGRAMS\${APP}.lnk"
	Delete "$DESKTOP\${APP}.lnk"
	ReadRegDWORD $0 HKCU "${APPKEY}" "OnPath"
	StrCmp $0 1 0 pathdone
		ReadRegStr $0 HKCU "Environment" "Path"
		${un.WordReplace} "$0" ";$INSTDIR" "" "+" $1
		${un.WordReplace} "$1" "$INSTDIR;" "" "+" $1
		${un.WordReplace} "$1" "$INSTDIR" "" "+" $1
		WriteRegExpandStr HKCU "Environment" "Path" "$1"
		SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=500
	pathdone:
	DeleteRegKey HKCU "${UNINSTKEY}"
	DeleteRegKey HKCU "${APPKEY}"
	; The user's data and settings stay: a later install finds them.
SectionEnd
