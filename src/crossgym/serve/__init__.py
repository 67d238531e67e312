"""crossgym.serve"""
