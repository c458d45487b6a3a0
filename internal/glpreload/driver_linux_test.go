package glpreload

import "testing"

// A memory map as /proc/self/maps has it: the executable, libc, and
// (once the window's libraries are loaded) libGL.
const (
	mapsLibc = `55d0c0a00000-55d0c0a28000 r--p 00000000 08:01 1050 /usr/bin/pilotdesk
7f25d5200000-7f25d5228000 r--p 00000000 08:01 2001 /usr/lib/x86_64-linux-gnu/libc.so.6
7f25d5228000-7f25d53bd000 r-xp 00028000 08:01 2001 /usr/lib/x86_64-linux-gnu/libc.so.6
7f25d5400000-7f25d5421000 rw-p 00000000 00:00 0 
7ffd4b1e0000-7ffd4b201000 rw-p 00000000 00:00 0                          [stack]
`
	mapsGL = mapsLibc + `7f25d5600000-7f25d5610000 r--p 00000000 08:01 3001 /opt/gl/lib/libGL.so.1.7.0
`
)

func TestDriverPath(t *testing.T) {
	const (
		debian = "/usr/lib/x86_64-linux-gnu/dri/swrast_dri.so"
		optGL  = "/opt/gl/lib/dri/swrast_dri.so"
		nvidia = "/proc/driver/nvidia/version"
	)
	tests := []struct {
		name  string
		maps  string
		env   map[string]string
		files []string
		want  string
	}{
		{"next to the C library", mapsLibc, nil, []string{debian}, debian},
		{"next to libGL before the C library", mapsGL, nil, []string{debian, optGL}, optGL},
		{"the C library's when libGL's has none", mapsGL, nil, []string{debian}, debian},
		{"no Mesa driver", mapsLibc, nil, nil, ""},
		{"Mesa's own override of its drivers' directory", mapsLibc,
			map[string]string{"LIBGL_DRIVERS_PATH": "/nowhere:/custom/dri"}, []string{debian, "/custom/dri/swrast_dri.so"}, "/custom/dri/swrast_dri.so"},
		{"the override is the only place Mesa looks", mapsLibc,
			map[string]string{"LIBGL_DRIVERS_PATH": "/custom/dri"}, []string{debian}, ""},
		{"NVIDIA's driver serves the display", mapsLibc, nil, []string{debian, nvidia}, ""},
		{"another GLX vendor is asked for", mapsLibc,
			map[string]string{"__GLX_VENDOR_LIBRARY_NAME": "nvidia"}, []string{debian}, ""},
		{"Mesa is asked for", mapsLibc,
			map[string]string{"__GLX_VENDOR_LIBRARY_NAME": "mesa"}, []string{debian}, debian},
		{"turned off", mapsGL,
			map[string]string{EnvOff: "off"}, []string{debian, optGL}, ""},
		{"only \"off\" turns it off", mapsLibc,
			map[string]string{EnvOff: "on"}, []string{debian}, debian},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			exists := func(p string) bool {
				for _, f := range tt.files {
					if f == p {
						return true
					}
				}
				return false
			}
			if got := driverPath(tt.maps, getenv, exists); got != tt.want {
				t.Errorf("driverPath = %q, want %q", got, tt.want)
			}
		})
	}
}
