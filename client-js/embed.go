// Package clientjs embeds the browser client (game page, live-ops page and
// the protocol library) so the server binary serves it with no files beside.
package clientjs

import "embed"

// Files are the client's static files.
//
//go:embed *.html *.js *.css lang/*.js
var Files embed.FS
