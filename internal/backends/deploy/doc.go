// Package deploy links the operator's side of the built-in backends into the manager:
// importing it registers each one's entry in adapters/backend's table (API type, documented
// lifecycle, rendered flags, data volume, purge) from the backend's <name>deploy package,
// without the binary's side, so the manager links no database driver or client (they were a
// quarter of its binary's mapped pages, which count in its memory). internal/backends links
// the whole backends into the memory-adapter binary; a new backend adds its <name>deploy
// import here and its own import there (docs/development.md, "Adding a backend").
package deploy
