package ui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/ui/store"
)

// TestGroupByFolder: View → Group by folder shows a header for each
// folder with its conversations under it, the folder of the most
// recently active conversation first, and remembers the choice; off, the
// list is flat again in its order. The end of the grouped list still asks
// for the relay's next page.
func TestGroupByFolder(t *testing.T) {
	h, _, home := folderHarness(t, Options{})
	api := filepath.Join(filepath.Dir(home), "api")
	if err := os.Mkdir(api, 0o755); err != nil {
		t.Fatal(err)
	}
	turn := func(what string) string {
		t.Helper()
		h.send("markdown")
		h.waitFor(what, func() bool { return completedTurns(h) == 1 && h.w.view.Dir != "" })
		return h.w.current
	}
	c1 := turn("the first conversation's turn, in home")
	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	h.waitFor("the relay's folders", func() bool { return d.ws != nil })
	d.folder.SetText(api)
	test.Tap(d.start)
	c2 := turn("the second conversation's turn, in api")
	h.w.newConversation()
	c3 := turn("the third conversation's turn, in home")

	s := h.w.sidebar
	shown := func() []string {
		var out []string
		for _, r := range s.rows {
			if r.entry < 0 {
				out = append(out, "# "+r.header)
			} else {
				out = append(out, s.entries[r.entry].ID)
			}
		}
		return out
	}
	flat := []string{c3, c2, c1}
	h.waitFor("the three conversations, newest first", func() bool {
		h.waitAgents()
		return slices.Equal(shown(), flat)
	})

	if s.grouped || h.w.groupItem.Checked {
		t.Fatal("the list starts grouped")
	}
	h.w.groupItem.Action()
	h.frame()
	want := []string{"# home", c3, c1, "# api", c2}
	if got := shown(); !slices.Equal(got, want) || !h.w.groupItem.Checked {
		t.Fatalf("grouped, the list shows %q (checked %v), want %q", got, h.w.groupItem.Checked, want)
	}
	if !h.app.Preferences().Bool(prefGroupByFolder) {
		t.Fatal("grouping is not remembered")
	}
	// make screenshots (-update) photographs the grouped list.
	(&shooter{t: t, variant: "dark"}).shot(h, "grouped-folders")
	// Under its header an entry does not name the folder again.
	row := s.newRow()
	s.list.UpdateItem(1, row)
	if status := row.(*hoverBox).content.Objects[2].(*widget.Label).Text; strings.Contains(status, "home") {
		t.Fatalf("under the header of home an entry says %q", status)
	}
	// A header is no conversation: selecting it keeps the one shown.
	s.list.Select(3)
	h.frame()
	if h.w.current != c3 {
		t.Fatalf("selecting a header opened %s", h.w.current)
	}
	// Ctrl+Tab follows the list as shown.
	h.w.switchBy(1)
	h.frame()
	if h.w.current != c1 {
		t.Fatalf("Ctrl+Tab from the first of home opened %s, want %s", h.w.current, c1)
	}
	// The last row in view asks for the next page.
	s.more = "next-page"
	s.list.UpdateItem(len(s.rows)-1, s.newRow())
	if h.w.pager.asked != "next-page" {
		t.Fatal("the end of the grouped list asked for no next page")
	}

	h.w.groupItem.Action()
	h.frame()
	if got := shown(); !slices.Equal(got, flat) || h.w.groupItem.Checked || h.app.Preferences().Bool(prefGroupByFolder) {
		t.Fatalf("flat again, the list shows %q (checked %v)", got, h.w.groupItem.Checked)
	}
}

// TestGroupByFolderHeaders: a worktree's conversation is under its
// repository's folder and its entry names only the branch; two folders of
// one name are told apart by their paths; a conversation in the relay's
// default folder, not fixed yet, is under "Default folder".
func TestGroupByFolderHeaders(t *testing.T) {
	entries := []store.Entry{
		{ID: "a", Chosen: "/src/one/api", Folder: "api · pilotdesk/aaaaaaaa"},
		{ID: "b", Chosen: "/src/two/api", Folder: "api"},
		{ID: "c"},
		{ID: "d", Chosen: "/src/one/api", Folder: "api"},
	}
	got, rows := groupByFolder(entries, true)
	var shown []string
	for _, r := range rows {
		if r.entry < 0 {
			shown = append(shown, "# "+r.header)
		} else {
			shown = append(shown, got[r.entry].ID)
		}
	}
	want := []string{"# /src/one/api", "a", "d", "# /src/two/api", "b", "# Default folder", "c"}
	if !slices.Equal(shown, want) {
		t.Fatalf("grouped: %q, want %q", shown, want)
	}
	s := &sidebar{grouped: true}
	for e, want := range map[int]string{0: "pilotdesk/aaaaaaaa", 1: "", 3: ""} {
		if f := s.shownFolder(entries[e]); f != want {
			t.Errorf("under its header %s names the folder %q, want %q", entries[e].ID, f, want)
		}
	}
}
