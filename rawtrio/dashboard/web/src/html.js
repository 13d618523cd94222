// htm bound to Preact: JSX-like templates with no compile step beyond the bundler.
import { h, Component } from "preact";
import htm from "htm";

export const html = htm.bind(h);

/**
 * A component that redraws only when its `item` (replaced, never mutated, by the fold)
 * or one of the listed props changed: a delta to one message redraws that message only.
 */
export function pure(render, keys = []) {
  return class Pure extends Component {
    shouldComponentUpdate(next, nextState) {
      if (nextState !== this.state) return true;
      if (next.item !== this.props.item) return true;
      return keys.some((k) => next[k] !== this.props[k]);
    }
    render(props) {
      return render(props, this);
    }
  };
}
