"""Showing results: the HTML gallery and the web app / HTTP API."""
