"""The Schedule Viewer and IR graph viewer: a loopback HTTP server and its static single-page app."""
