"""crossgym.eval"""
