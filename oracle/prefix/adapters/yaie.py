class YaieAdapter: shape='yaie'
