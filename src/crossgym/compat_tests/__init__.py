"""crossgym.compat_tests"""
