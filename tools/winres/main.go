// Command winres writes what the Windows build embeds in pilotdesk.exe:
// the app's icon as a multi-size .ico, an application manifest, and a
// resource script (.rc) naming both with the version information Explorer
// shows in a file's Details. MinGW's windres compiles the script into a
// .syso that `go build` links in (scripts/package-windows.sh). It does for
// a cross build what the fyne tool does on Windows itself.
//
//	winres -icon assets/icon.png -version 0.1.0 -build 1 -out dist/windows/res
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/image/draw"
)

// iconSizes are the sizes Windows asks an icon for: the taskbar and title
// bar (16–32 at 100–200% scaling), Start (48, 64) and Explorer's large
// views (256).
var iconSizes = []int{16, 20, 24, 32, 40, 48, 64, 256}

func main() {
	icon := flag.String("icon", "assets/icon.png", "the app's icon, a square PNG")
	version := flag.String("version", "", "the app's version, MAJOR.MINOR.PATCH")
	build := flag.Int("build", 0, "the build number")
	out := flag.String("out", "", "folder to write pilotdesk.ico, pilotdesk.manifest and pilotdesk.rc into")
	flag.Parse()
	if err := run(*icon, *version, *build, *out); err != nil {
		fmt.Fprintln(os.Stderr, "winres:", err)
		os.Exit(1)
	}
}

func run(iconPath, version string, build int, out string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	quad, err := versionQuad(version, build)
	if err != nil {
		return err
	}
	f, err := os.Open(iconPath)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", iconPath, err)
	}
	ico, err := encodeICO(img, iconSizes)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{
		"pilotdesk.ico":      ico,
		"pilotdesk.manifest": []byte(manifest(quad)),
		"pilotdesk.rc":       []byte(resourceScript(version, quad)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// versionQuad is Windows' four-part version: MAJOR.MINOR.PATCH.BUILD.
func versionQuad(version string, build int) ([4]uint16, error) {
	var q [4]uint16
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return q, fmt.Errorf("version %q is not MAJOR.MINOR.PATCH", version)
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return q, fmt.Errorf("version %q: %w", version, err)
		}
		q[i] = uint16(n)
	}
	if build < 0 || build > 0xffff {
		return q, fmt.Errorf("build %d is out of range", build)
	}
	q[3] = uint16(build)
	return q, nil
}

func dotted(q [4]uint16) string { return fmt.Sprintf("%d.%d.%d.%d", q[0], q[1], q[2], q[3]) }

// encodeICO writes an .ico holding img scaled to each size, each image
// stored as PNG (which Windows reads in icons since Vista).
func encodeICO(img image.Image, sizes []int) ([]byte, error) {
	var images [][]byte
	for _, s := range sizes {
		dst := image.NewNRGBA(image.Rect(0, 0, s, s))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		var b bytes.Buffer
		if err := png.Encode(&b, dst); err != nil {
			return nil, err
		}
		images = append(images, b.Bytes())
	}
	var out bytes.Buffer
	// ICONDIR: reserved, type 1 (icon), count.
	binary.Write(&out, binary.LittleEndian, [3]uint16{0, 1, uint16(len(sizes))})
	offset := 6 + 16*len(sizes)
	for i, s := range sizes {
		dim := byte(s) // 256 is written as 0
		entry := struct {
			Width, Height, Colors, Reserved byte
			Planes, BitCount                uint16
			Size, Offset                    uint32
		}{dim, dim, 0, 0, 1, 32, uint32(len(images[i])), uint32(offset)}
		binary.Write(&out, binary.LittleEndian, entry)
		offset += len(images[i])
	}
	for _, b := range images {
		out.Write(b)
	}
	return out.Bytes(), nil
}

// manifest declares what a current Windows app declares: sharp text on
// every monitor's scaling (per-monitor DPI awareness, which GLFW handles),
// the common controls of today's look for the file dialogs, UTF-8 as the
// process's code page (paths with non-ASCII characters), and no elevation.
func manifest(q [4]uint16) string {
	return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<assembly xmlns="urn:schemas-microsoft-com:asm.v1" manifestVersion="1.0" xmlns:asmv3="urn:schemas-microsoft-com:asm.v3">
  <assemblyIdentity type="win32" name="io.github.pilotdesk" version="` + dotted(q) + `" processorArchitecture="amd64"/>
  <description>pilotdesk</description>
  <dependency>
    <dependentAssembly>
      <assemblyIdentity type="win32" name="Microsoft.Windows.Common-Controls" version="6.0.0.0" processorArchitecture="*" publicKeyToken="6595b64144ccf1df" language="*"/>
    </dependentAssembly>
  </dependency>
  <trustInfo xmlns="urn:schemas-microsoft-com:asm.v3">
    <security>
      <requestedPrivileges>
        <requestedExecutionLevel level="asInvoker" uiAccess="false"/>
      </requestedPrivileges>
    </security>
  </trustInfo>
  <compatibility xmlns="urn:schemas-microsoft-com:compatibility.v1">
    <application>
      <supportedOS Id="{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}"/>
    </application>
  </compatibility>
  <asmv3:application>
    <asmv3:windowsSettings>
      <dpiAware xmlns="http://schemas.microsoft.com/SMI/2005/WindowsSettings">true/pm</dpiAware>
      <dpiAwareness xmlns="http://schemas.microsoft.com/SMI/2016/WindowsSettings">PerMonitorV2, PerMonitor</dpiAwareness>
      <activeCodePage xmlns="http://schemas.microsoft.com/SMI/2019/WindowsSettings">UTF-8</activeCodePage>
    </asmv3:windowsSettings>
  </asmv3:application>
</assembly>
`
}

// resourceScript names the icon (the first icon resource is the one
// Explorer shows), the manifest (resource 1 of type 24), and the version.
func resourceScript(version string, q [4]uint16) string {
	comma := fmt.Sprintf("%d,%d,%d,%d", q[0], q[1], q[2], q[3])
	return `#pragma code_page(65001)
1 ICON "pilotdesk.ico"
1 24 "pilotdesk.manifest"
1 VERSIONINFO
FILEVERSION ` + comma + `
PRODUCTVERSION ` + comma + `
FILEOS 0x40004
FILETYPE 0x1
BEGIN
  BLOCK "StringFileInfo"
  BEGIN
    BLOCK "040904B0"
    BEGIN
      VALUE "CompanyName", "pilotdesk"
      VALUE "FileDescription", "pilotdesk"
      VALUE "FileVersion", "` + version + `"
      VALUE "InternalName", "pilotdesk"
      VALUE "LegalCopyright", "pilotdesk contributors"
      VALUE "OriginalFilename", "pilotdesk.exe"
      VALUE "ProductName", "pilotdesk"
      VALUE "ProductVersion", "` + version + `"
    END
  END
  BLOCK "VarFileInfo"
  BEGIN
    VALUE "Translation", 0x409, 1200
  END
END
`
}
