"""byog.evals"""
