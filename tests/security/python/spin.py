# Cases 8 and 9 in Python: an endless loop; ends only by --timeout or --fuel.
# "spinning" shows the interpreter got as far as the loop (start-up alone
# costs about 80 million instructions).
print("spinning", flush=True)
while True:
    pass
