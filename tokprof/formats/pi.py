FORMAT = "pi"
DESCRIPTION = "x"

def sniff(doc):
    return False
