"""Test support code shared by integration and end-to-end tests (servers, pushers, fakes)."""
