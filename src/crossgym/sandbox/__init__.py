"""crossgym.sandbox"""
