"""byog.schemas"""
