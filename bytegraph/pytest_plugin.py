def placeholder(): pass
