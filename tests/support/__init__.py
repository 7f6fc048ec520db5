"""Helpers shared by the test directories: paths, git in temporary repositories, free ports."""
