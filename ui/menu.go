package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// mainMenu is the window's menu: File (New conversation, Open folder,
// Delete conversation…, Connect a device…, Settings…, Quit), View (Group by folder) and Help
// (About). The items show
// the shortcuts the canvas handles. It keeps the items that change
// (showOpenFolder).
func (w *Window) mainMenu() *fyne.MainMenu {
	newConv := fyne.NewMenuItemWithIcon("New conversation", theme.ContentAddIcon(), func() {
		if w.modal == nil {
			w.askNewConversation()
		}
	})
	newConv.Shortcut = shortcutNew
	settings := fyne.NewMenuItemWithIcon("Settings…", theme.SettingsIcon(), w.ShowSettings)
	settings.Shortcut = shortcutSettings
	w.openFolderItem = fyne.NewMenuItemWithIcon(openFolderLabel, theme.FolderOpenIcon(), w.openFolder)
	w.openFolderItem.Shortcut = shortcutOpenFolder
	w.openFolderItem.Disabled = true // until a conversation has a folder (showOpenFolder)
	w.deleteItem = fyne.NewMenuItemWithIcon(deleteLabel, theme.DeleteIcon(), w.confirmDelete)
	w.deleteItem.Disabled = true // until the relay knows the conversation shown (showDeleteItem)
	// With no action, the driver quits the app the way closing the window
	// does.
	quit := fyne.NewMenuItem("Quit", nil)
	quit.IsQuit = true
	about := fyne.NewMenuItemWithIcon("About pilotdesk", theme.InfoIcon(), w.ShowAbout)
	share := fyne.NewMenuItemWithIcon("Connect a device…", theme.ComputerIcon(), w.ShowShare)
	group := fyne.NewMenuItem("Group by folder", nil)
	group.Checked = w.sidebar.grouped
	group.Action = func() {
		w.sidebar.setGrouped(!w.sidebar.grouped)
		group.Checked = w.sidebar.grouped
		w.win.SetMainMenu(w.menu) // the driver draws the check again
	}
	w.groupItem = group
	w.menu = fyne.NewMainMenu(
		fyne.NewMenu("File", newConv, w.openFolderItem, w.deleteItem, share, settings, fyne.NewMenuItemSeparator(), quit),
		fyne.NewMenu("View", group),
		fyne.NewMenu("Help", about),
	)
	return w.menu
}
