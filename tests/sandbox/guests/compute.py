# compute.py — a good program: compute, write the result into the writable
# workspace, print it. Env: none.
total = sum(i * i for i in range(1, 1001))
with open("/workspace/result.txt", "w") as f:
    f.write("%d\n" % total)
os.makedirs("/workspace/out/deep", exist_ok=True)
with open("/workspace/out/deep/data.bin", "wb") as f:
    f.write(bytes(range(256)) * 64)
print(total)
