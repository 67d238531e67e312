"""crossgym.rollout"""
