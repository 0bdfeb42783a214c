"""byog.bench"""
