import ArgumentParser

print("x")
